// Board configuration: edit, then upload hand_servo_board.ino. Values are checked at boot by
// hsb_board_config_valid(); an invalid configuration leaves every servo detached and makes the
// on-board LED blink fast.
#ifndef HSB_CONFIG_H
#define HSB_CONFIG_H

// Serial link to the host (USB CDC / USB-serial). The driver's `baud` parameter must match.
#define HSB_BAUD 115200

// Output stage: 0 = Arduino Servo library on GPIO pins (up to 12 servos on an UNO/Nano),
//               1 = PCA9685 16-channel PWM board over I2C (Adafruit PWM Servo Driver library).
#ifndef HSB_USE_PCA9685
#define HSB_USE_PCA9685 0
#endif

#define HSB_CHANNELS 5

// Servo library: channel -> GPIO pin (PWM-capable pins on an UNO; any digital pin works with Servo).
#define HSB_PINS {3, 5, 6, 9, 10}
// PCA9685: channel -> PCA9685 output 0..15, I2C address and the chip's real oscillator frequency
// (25 MHz nominal; trim per board by measuring a 1500 us pulse with a scope, see README).
#define HSB_PCA9685_OUTPUTS {0, 1, 2, 3, 4}
#define HSB_PCA9685_ADDR 0x40
#define HSB_PCA9685_OSC_HZ 25000000UL
#define HSB_PCA9685_PWM_HZ 50

// Clamp range and safe pose per channel (us). Conservative SG90 defaults: 1000-2000 us is about
// 90 degrees of horn travel around centre, inside the mechanical stops of every SG90. Widen only
// after checking your linkage by hand (full SG90 range is roughly 500-2500 us and varies by unit).
// The safe pose is the OPEN hand (tendons slack): min_us for a servo that closes towards max_us.
#define HSB_MIN_US {1000, 1000, 1000, 1000, 1000}
#define HSB_MAX_US {2000, 2000, 2000, 2000, 2000}
#define HSB_SAFE_US {1000, 1000, 1000, 1000, 1000}

// Watchdog: no accepted frame for this long -> safe pose (HSB_SAFE_POSE) or stop all pulses
// (HSB_SAFE_DETACH: an SG90 without pulses goes limp). 0 disables (not recommended).
#define HSB_WATCHDOG_MS 500
#define HSB_WATCHDOG_ACTION HSB_SAFE_POSE

// Status LED: on while outputs are attached, blinking while the watchdog holds the safe pose.
#define HSB_LED_PIN 13

#endif  // HSB_CONFIG_H
