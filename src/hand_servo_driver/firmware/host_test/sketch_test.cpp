// Runs the real sketch (hand_servo_board.ino) on the host against stand-ins of the Arduino core,
// the Servo library and the PCA9685 library (arduino_stubs/): boot status, pulses reach the
// servos, corrupted bytes change nothing, clamping, the watchdog's safe pose, detach.
//
//   cd firmware
//   g++ -std=c++11 -Wall -Wextra -Werror -Ihost_test/arduino_stubs -Ihand_servo_board
//       [-DHSB_USE_PCA9685=1] host_test/sketch_test.cpp hand_servo_board/protocol.cpp
//       hand_servo_board/board_logic.cpp -o /tmp/sketch_test && /tmp/sketch_test
#include "Arduino.h"

uint32_t stub_millis = 0;
int stub_led = -1;
StubSerial Serial;
#if HSB_USE_PCA9685
#include "Adafruit_PWMServoDriver.h"
StubPca stub_pca;
#endif

#include "hand_servo_board.ino"  // one translation unit: the test sees the sketch's statics

#include <cstdio>
#include <vector>

static int checks = 0, failed = 0;
#define CHECK(cond, what)                                       \
  do {                                                          \
    ++checks;                                                   \
    if (!(cond)) {                                              \
      ++failed;                                                 \
      std::printf("FAIL line %d: %s\n", __LINE__, what);        \
    }                                                           \
  } while (0)

static std::vector<hsb_frame> g_rx;
static void on_frame(void *, const hsb_frame *f) { g_rx.push_back(*f); }

// Decodes everything the sketch wrote to Serial since the last call.
static std::vector<hsb_frame> replies() {
  g_rx.clear();
  hsb_parser p;
  hsb_parser_init(&p, on_frame, 0);
  for (size_t i = 0; i < Serial.tx.size(); ++i) hsb_parser_feed(&p, Serial.tx[i], 0);
  Serial.tx.clear();
  return g_rx;
}

static void send(const uint8_t *frame, size_t n, int flip_bit = -1) {
  for (size_t i = 0; i < n; ++i) {
    uint8_t b = frame[i];
    if (flip_bit >= 0 && (size_t)(flip_bit / 8) == i) b ^= (uint8_t)(1u << (flip_bit % 8));
    Serial.rx.push_back(b);
  }
}

static void send_pulses(uint16_t seq, const uint16_t *us, uint8_t n, int flip_bit = -1) {
  uint8_t pl[1 + 3 * HSB_MAX_CHANNELS];
  pl[0] = n;
  for (uint8_t i = 0; i < n; ++i) {
    pl[1 + 3 * i] = i;
    hsb_put_u16(pl + 2 + 3 * i, us[i]);
  }
  uint8_t frame[HSB_MAX_FRAME];
  size_t len = hsb_encode(HSB_MSG_SET_PULSES, seq, pl, (uint8_t)(1 + 3 * n), frame);
  send(frame, len, flip_bit);
}

static int out_us(uint8_t ch) {  // what the output stage drives on a channel, 0 = no pulses
#if HSB_USE_PCA9685
  return stub_pca.off[kOutputs[ch]] ? 0 : stub_pca.us[kOutputs[ch]];
#else
  return servos[ch].attached() ? servos[ch].us_ : 0;
#endif
}

static bool status_is(const hsb_frame &f, uint16_t ack, uint8_t result, uint8_t flags) {
  return f.type == HSB_MSG_STATUS && f.len == HSB_STATUS_LEN && hsb_get_u16(f.payload) == ack &&
         f.payload[3] == result && f.payload[4] == flags;
}

int main() {
#if HSB_USE_PCA9685
  for (int i = 0; i < 16; ++i) {
    stub_pca.us[i] = -1;
    stub_pca.off[i] = false;
  }
#endif
  stub_millis = 1000;
  setup();
  CHECK(Serial.baud == HSB_BAUD, "Serial.begin(HSB_BAUD)");
  std::vector<hsb_frame> r = replies();
  CHECK(r.size() == 1 && status_is(r[0], 0, HSB_RESULT_BOOT, 0), "BOOT status at start");
  for (uint8_t ch = 0; ch < HSB_CHANNELS; ++ch) CHECK(out_us(ch) == 0, "no pulses before the first frame");
#if HSB_USE_PCA9685
  CHECK(stub_pca.begun && stub_pca.osc == (long)HSB_PCA9685_OSC_HZ && stub_pca.freq == HSB_PCA9685_PWM_HZ,
        "PCA9685 set up at 50 Hz");
#endif

  const uint16_t pose[5] = {1500, 1600, 1700, 1800, 1900};
  stub_millis = 1010;
  send_pulses(1, pose, 5);
  loop();
  r = replies();
  CHECK(r.size() == 1 && status_is(r[0], 1, HSB_RESULT_OK, HSB_FLAG_ATTACHED), "ack of SET_PULSES");
  for (uint8_t ch = 0; ch < 5; ++ch) CHECK(out_us(ch) == pose[ch], "commanded pulse on every servo");
#if !HSB_USE_PCA9685
  const uint8_t pins[5] = HSB_PINS;
  for (uint8_t ch = 0; ch < 5; ++ch)
    CHECK(servos[ch].pin_ == pins[ch] && servos[ch].min_ == 1000 && servos[ch].max_ == 2000, "attach(pin, min, max)");
#endif
  CHECK(stub_led == HIGH, "LED on while attached");

  const uint16_t other[5] = {1200, 1200, 1200, 1200, 1200};
  stub_millis = 1020;
  send_pulses(2, other, 5, 8 * 8 + 3);  // a flipped bit in the first pulse
  loop();
  CHECK(replies().empty(), "no reply to a corrupted frame");
  for (uint8_t ch = 0; ch < 5; ++ch) CHECK(out_us(ch) == pose[ch], "corrupted frame not applied");

  const uint16_t wide[2] = {2400, 600};
  stub_millis = 1030;
  send_pulses(3, wide, 2);
  loop();
  r = replies();
  CHECK(r.size() == 1 && status_is(r[0], 3, HSB_RESULT_CLAMPED, HSB_FLAG_ATTACHED), "clamped ack");
  CHECK(out_us(0) == 2000 && out_us(1) == 1000 && out_us(2) == 1700, "pulses clamped to 1000..2000");

  stub_millis = 1030 + HSB_WATCHDOG_MS;
  loop();
  CHECK(replies().empty(), "watchdog waits watchdog_ms");
  CHECK(out_us(0) == 2000, "still the commanded pose");
  stub_millis = 1030 + HSB_WATCHDOG_MS + 1;
  loop();
  r = replies();
  CHECK(r.size() == 1 && status_is(r[0], 3, HSB_RESULT_WATCHDOG, HSB_FLAG_ATTACHED | HSB_FLAG_WATCHDOG | HSB_FLAG_SAFE),
        "WATCHDOG status");
  const uint16_t safe[5] = HSB_SAFE_US;
  for (uint8_t ch = 0; ch < 5; ++ch) CHECK(out_us(ch) == safe[ch], "safe pose after the watchdog");

  uint8_t frame[HSB_MAX_FRAME];
  uint8_t mode = HSB_SAFE_DETACH;
  stub_millis = 2000;
  send(frame, hsb_encode(HSB_MSG_SAFE, 4, &mode, 1, frame));
  loop();
  r = replies();
  CHECK(r.size() == 1 && status_is(r[0], 4, HSB_RESULT_OK, HSB_FLAG_WATCHDOG | HSB_FLAG_SAFE), "ack of SAFE detach");
  for (uint8_t ch = 0; ch < 5; ++ch) CHECK(out_us(ch) == 0, "detached: no pulses");

  std::printf("sketch (%s): checks=%d failed=%d\n", HSB_USE_PCA9685 ? "PCA9685" : "Servo", checks, failed);
  return failed ? 1 : 0;
}
