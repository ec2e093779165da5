// Minimal host stand-in for the Arduino core, enough to compile and run hand_servo_board.ino on
// the host (sketch_test.cpp). Not a general emulator: time is set by the test, Serial is two queues.
#ifndef HSB_STUB_ARDUINO_H
#define HSB_STUB_ARDUINO_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <deque>
#include <vector>

#define HIGH 1
#define LOW 0
#define OUTPUT 1

extern uint32_t stub_millis;
extern int stub_led;
inline uint32_t millis() { return stub_millis; }
inline void pinMode(uint8_t, uint8_t) {}
inline void digitalWrite(uint8_t pin, uint8_t v) {
  if (pin == 13) stub_led = v;
}

struct StubSerial {
  std::deque<uint8_t> rx;   // host -> board
  std::vector<uint8_t> tx;  // board -> host
  long baud = 0;
  void begin(long b) { baud = b; }
  int available() { return (int)rx.size(); }
  int read() {
    if (rx.empty()) return -1;
    int c = rx.front();
    rx.pop_front();
    return c;
  }
  size_t write(const uint8_t *d, size_t n) {
    tx.insert(tx.end(), d, d + n);
    return n;
  }
};
extern StubSerial Serial;
#endif
