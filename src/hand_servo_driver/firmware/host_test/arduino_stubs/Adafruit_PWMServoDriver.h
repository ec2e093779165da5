// Host stand-in for the Adafruit PWM Servo Driver library (PCA9685): records each output.
#ifndef HSB_STUB_PCA9685_H
#define HSB_STUB_PCA9685_H
#include <stdint.h>

struct StubPca {
  int us[16];      // last writeMicroseconds, 0 when switched fully off
  bool off[16];    // setPWM(ch, 0, 4096): no pulses
  long osc = 0, freq = 0;
  bool begun = false;
};
extern StubPca stub_pca;

class Adafruit_PWMServoDriver {
 public:
  explicit Adafruit_PWMServoDriver(uint8_t addr) : addr_(addr) {}
  bool begin() {
    stub_pca.begun = true;
    return true;
  }
  void setOscillatorFrequency(uint32_t f) { stub_pca.osc = (long)f; }
  void setPWMFreq(float f) { stub_pca.freq = (long)f; }
  void setPWM(uint8_t ch, uint16_t on, uint16_t off) {
    if (on == 0 && off == 4096) {
      stub_pca.off[ch] = true;
      stub_pca.us[ch] = 0;
    }
  }
  void writeMicroseconds(uint8_t ch, uint16_t us) {
    stub_pca.off[ch] = false;
    stub_pca.us[ch] = us;
  }
  uint8_t addr_;
};
#endif
