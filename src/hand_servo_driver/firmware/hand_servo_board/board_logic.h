// The board's rules, hardware-free: validate every frame, clamp, acknowledge, watchdog.
// Same rules as hand_servo_driver/board.py (the simulated board); both are checked against the
// shared vectors in firmware/test_vectors.txt. The sketch (hand_servo_board.ino) only moves bytes
// between Serial and hsb_board_* and copies hsb_board.outputs to the servos.
#ifndef HSB_BOARD_LOGIC_H
#define HSB_BOARD_LOGIC_H

#include "protocol.h"

#define HSB_STATUS_FRAME_LEN (HSB_HEADER_LEN + HSB_STATUS_LEN + HSB_CRC_LEN)

// Receives each reply frame (a STATUS) as soon as the board produces it.
typedef void (*hsb_reply_cb)(void *ctx, const uint8_t *frame, size_t len);

struct hsb_board_config {
  uint8_t channels;                     // 1..HSB_MAX_CHANNELS
  uint16_t min_us[HSB_MAX_CHANNELS];    // clamp range per channel, 500 <= min < max <= 2500
  uint16_t max_us[HSB_MAX_CHANNELS];
  uint16_t safe_us[HSB_MAX_CHANNELS];   // safe pose per channel, min <= safe <= max
  uint16_t watchdog_ms;                 // 0 = disabled
  uint8_t watchdog_action;              // HSB_SAFE_POSE or HSB_SAFE_DETACH
};

struct hsb_board {
  hsb_board_config cfg;
  hsb_parser parser;
  uint16_t outputs[HSB_MAX_CHANNELS];   // pulse width in us; 0 = detached (no pulses)
  uint8_t outputs_changed;              // set whenever outputs were (re)written; the sketch clears it
  uint8_t flags;                        // HSB_FLAG_WATCHDOG | HSB_FLAG_SAFE (ATTACHED is computed)
  uint16_t length_errors, range_errors, type_errors, clamped, watchdog_trips;
  uint16_t tx_seq;
  uint16_t last_seq;                    // seq of the last accepted frame
  uint32_t last_valid_ms;               // time of the last accepted frame (watchdog)
  uint32_t now_ms;                      // time of the bytes being parsed
  hsb_reply_cb reply;
  void *reply_ctx;
};

// Returns 0 if the configuration is invalid (then the board must not drive anything).
int hsb_board_config_valid(const hsb_board_config *cfg);
// Boots the board at now_ms: outputs detached, a BOOT status sent to reply(ctx, ...).
void hsb_board_init(hsb_board *b, const hsb_board_config *cfg, uint32_t now_ms, hsb_reply_cb reply, void *ctx);
// Bytes from the host at now_ms (call hsb_board_poll first). Each CRC-valid frame gets a STATUS.
void hsb_board_receive(hsb_board *b, const uint8_t *data, size_t n, uint32_t now_ms);
// Time passes: expire a partial frame, run the watchdog (a trip sends a WATCHDOG status).
void hsb_board_poll(hsb_board *b, uint32_t now_ms);
uint8_t hsb_board_flags(const hsb_board *b);
// The 9 STATUS counters in wire order: frames crc length range type timeouts garbage clamped watchdog.
void hsb_board_counters(const hsb_board *b, uint16_t out[9]);

#endif  // HSB_BOARD_LOGIC_H
