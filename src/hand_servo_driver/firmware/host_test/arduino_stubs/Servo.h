// Host stand-in for the Arduino Servo library: records what the sketch asks of each servo.
#ifndef HSB_STUB_SERVO_H
#define HSB_STUB_SERVO_H
#include <stdint.h>

class Servo {
 public:
  uint8_t attach(int pin, int min_us, int max_us) {
    pin_ = pin;
    min_ = min_us;
    max_ = max_us;
    attached_ = true;
    ++attaches;
    return 1;
  }
  void detach() { attached_ = false; }
  bool attached() const { return attached_; }
  void writeMicroseconds(int us) { us_ = us; }
  int pin_ = -1, min_ = 0, max_ = 0, us_ = 1500, attaches = 0;
  bool attached_ = false;
};
#endif
