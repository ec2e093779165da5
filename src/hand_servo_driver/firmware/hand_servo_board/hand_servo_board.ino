// hand_servo_board: five SG90 tendon servos of the webcam hand, driven over USB serial by the
// ROS 2 node hand_servo_driver/servo_driver. Protocol: see the package README ("Serial protocol").
//
// Everything that decides what the servos do lives in portable C++ (protocol.cpp: framing and
// CRC; board_logic.cpp: validation, clamping, acknowledgement, watchdog), tested on the host with
// g++ against the same vectors as the Python driver. This file only moves bytes between Serial and
// the board logic and copies its outputs to the servos. Configure in config.h.
//
// Output stage (config.h HSB_USE_PCA9685): the Arduino Servo library on GPIO pins (default) or a
// PCA9685 16-channel PWM board over I2C (install "Adafruit PWM Servo Driver Library").
// Power the servos from their own 5-6 V supply (>= 1 A per stalled SG90), grounds joined.
#include <Arduino.h>

#include "board_logic.h"
#include "config.h"
#include "protocol.h"

#if HSB_USE_PCA9685
#include <Adafruit_PWMServoDriver.h>
#include <Wire.h>
static Adafruit_PWMServoDriver pca(HSB_PCA9685_ADDR);
static const uint8_t kOutputs[HSB_CHANNELS] = HSB_PCA9685_OUTPUTS;
#else
#include <Servo.h>
static Servo servos[HSB_CHANNELS];
static const uint8_t kPins[HSB_CHANNELS] = HSB_PINS;
#endif

static const uint16_t kMinUs[HSB_CHANNELS] = HSB_MIN_US;
static const uint16_t kMaxUs[HSB_CHANNELS] = HSB_MAX_US;
static const uint16_t kSafeUs[HSB_CHANNELS] = HSB_SAFE_US;

static hsb_board board;
static bool config_ok = false;
static uint16_t applied[HSB_CHANNELS];  // what the output stage does now, 0 = no pulses

static void send_reply(void *, const uint8_t *frame, size_t len) { Serial.write(frame, len); }

static void write_output(uint8_t ch, uint16_t us) {
#if HSB_USE_PCA9685
  if (us == 0) {
    pca.setPWM(kOutputs[ch], 0, 4096);  // full off: no pulses, the servo goes limp
  } else {
    pca.writeMicroseconds(kOutputs[ch], us);
  }
#else
  if (us == 0) {
    if (servos[ch].attached()) servos[ch].detach();
  } else {
    // Set the width before attaching so the very first pulse is already the commanded one.
    servos[ch].writeMicroseconds(us);
    if (!servos[ch].attached()) servos[ch].attach(kPins[ch], kMinUs[ch], kMaxUs[ch]);
    servos[ch].writeMicroseconds(us);
  }
#endif
}

void setup() {
  pinMode(HSB_LED_PIN, OUTPUT);
  digitalWrite(HSB_LED_PIN, LOW);
  Serial.begin(HSB_BAUD);
#if HSB_USE_PCA9685
  pca.begin();
  pca.setOscillatorFrequency(HSB_PCA9685_OSC_HZ);
  pca.setPWMFreq(HSB_PCA9685_PWM_HZ);
  for (uint8_t ch = 0; ch < HSB_CHANNELS; ++ch) pca.setPWM(kOutputs[ch], 0, 4096);
#endif
  hsb_board_config cfg;
  memset(&cfg, 0, sizeof(cfg));
  cfg.channels = HSB_CHANNELS;
  for (uint8_t ch = 0; ch < HSB_CHANNELS; ++ch) {
    cfg.min_us[ch] = kMinUs[ch];
    cfg.max_us[ch] = kMaxUs[ch];
    cfg.safe_us[ch] = kSafeUs[ch];
    applied[ch] = 0;
  }
  cfg.watchdog_ms = HSB_WATCHDOG_MS;
  cfg.watchdog_action = HSB_WATCHDOG_ACTION;
  config_ok = hsb_board_config_valid(&cfg) != 0;
  if (config_ok) hsb_board_init(&board, &cfg, millis(), send_reply, 0);  // sends the BOOT status
}

void loop() {
  uint32_t now = millis();
  if (!config_ok) {  // never drive anything with a broken config.h
    digitalWrite(HSB_LED_PIN, (now / 100) & 1 ? HIGH : LOW);
    return;
  }
  hsb_board_poll(&board, now);
  int avail = Serial.available();
  while (avail-- > 0) {
    int c = Serial.read();
    if (c < 0) break;
    uint8_t byte = (uint8_t)c;
    hsb_board_receive(&board, &byte, 1, now);
  }
  if (board.outputs_changed) {
    board.outputs_changed = 0;
    for (uint8_t ch = 0; ch < HSB_CHANNELS; ++ch) {
      if (board.outputs[ch] != applied[ch]) {
        write_output(ch, board.outputs[ch]);
        applied[ch] = board.outputs[ch];
      }
    }
  }
  uint8_t flags = hsb_board_flags(&board);
  bool led = (flags & HSB_FLAG_WATCHDOG) ? ((now / 250) & 1) : (flags & HSB_FLAG_ATTACHED);
  digitalWrite(HSB_LED_PIN, led ? HIGH : LOW);
}
