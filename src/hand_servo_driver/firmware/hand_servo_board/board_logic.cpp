// See board_logic.h. Rule for rule the same as hand_servo_driver/board.py (Board).
#include "board_logic.h"

#include <string.h>

static uint8_t attached(const hsb_board *b) {
  for (uint8_t ch = 0; ch < b->cfg.channels; ++ch)
    if (b->outputs[ch]) return 1;
  return 0;
}

uint8_t hsb_board_flags(const hsb_board *b) {
  uint8_t f = (uint8_t)(b->flags & ~HSB_FLAG_ATTACHED);
  return (uint8_t)(f | (attached(b) ? HSB_FLAG_ATTACHED : 0));
}

void hsb_board_counters(const hsb_board *b, uint16_t out[9]) {
  out[0] = b->parser.frames;
  out[1] = b->parser.crc_errors;
  out[2] = (uint16_t)(b->parser.length_errors + b->length_errors);
  out[3] = b->range_errors;
  out[4] = b->type_errors;
  out[5] = b->parser.timeouts;
  out[6] = b->parser.garbage_bytes;
  out[7] = b->clamped;
  out[8] = b->watchdog_trips;
}

static void send_status(hsb_board *b, uint16_t ack_seq, uint8_t ack_type, uint8_t result) {
  uint8_t pl[HSB_STATUS_LEN];
  hsb_put_u16(pl, ack_seq);
  pl[2] = ack_type;
  pl[3] = result;
  pl[4] = hsb_board_flags(b);
  pl[5] = b->cfg.channels;
  hsb_put_u16(pl + 6, b->cfg.watchdog_ms);
  uint16_t c[9];
  hsb_board_counters(b, c);
  for (uint8_t i = 0; i < 9; ++i) hsb_put_u16(pl + 8 + 2 * i, c[i]);
  uint8_t frame[HSB_STATUS_FRAME_LEN];
  size_t n = hsb_encode(HSB_MSG_STATUS, b->tx_seq++, pl, HSB_STATUS_LEN, frame);
  if (b->reply) b->reply(b->reply_ctx, frame, n);
}

static uint8_t reject_length(hsb_board *b) {
  b->length_errors++;
  return HSB_RESULT_BAD_LENGTH;
}

static uint8_t reject_range(hsb_board *b) {
  b->range_errors++;
  return HSB_RESULT_BAD_RANGE;
}

// Validates the whole SET_PULSES payload before touching any output.
static uint8_t set_pulses(hsb_board *b, const hsb_frame *f) {
  const hsb_board_config *cfg = &b->cfg;
  if (f->len == 0) return reject_length(b);
  uint8_t n = f->payload[0];
  if (n == 0 || n > cfg->channels || f->len != 1 + 3 * n) return reject_length(b);
  uint16_t seen = 0;
  for (uint8_t i = 0; i < n; ++i) {
    const uint8_t *e = f->payload + 1 + 3 * i;
    uint8_t ch = e[0];
    uint16_t us = hsb_get_u16(e + 1);
    if (ch >= cfg->channels || (seen & (1u << ch))) return reject_range(b);
    if (us < HSB_PULSE_MIN_US || us > HSB_PULSE_MAX_US) return reject_range(b);
    seen = (uint16_t)(seen | (1u << ch));
  }
  uint8_t result = HSB_RESULT_OK;
  for (uint8_t i = 0; i < n; ++i) {
    const uint8_t *e = f->payload + 1 + 3 * i;
    uint8_t ch = e[0];
    uint16_t us = hsb_get_u16(e + 1);
    uint16_t c = us < cfg->min_us[ch] ? cfg->min_us[ch] : (us > cfg->max_us[ch] ? cfg->max_us[ch] : us);
    if (c != us) {
      b->clamped++;
      result = HSB_RESULT_CLAMPED;
    }
    b->outputs[ch] = c;
  }
  b->flags = (uint8_t)(b->flags & ~(HSB_FLAG_WATCHDOG | HSB_FLAG_SAFE));
  b->outputs_changed = 1;
  return result;
}

static void go_safe(hsb_board *b, uint8_t mode) {
  for (uint8_t ch = 0; ch < b->cfg.channels; ++ch)
    b->outputs[ch] = mode == HSB_SAFE_POSE ? b->cfg.safe_us[ch] : 0;
  b->outputs_changed = 1;
}

static void handle(void *ctx, const hsb_frame *f) {
  hsb_board *b = (hsb_board *)ctx;
  uint8_t result = HSB_RESULT_OK;
  switch (f->type) {
    case HSB_MSG_SET_PULSES:
      result = set_pulses(b, f);
      break;
    case HSB_MSG_HEARTBEAT:
      if (f->len != 0) result = reject_length(b);
      break;
    case HSB_MSG_SAFE:
      if (f->len != 1) {
        result = reject_length(b);
      } else if (f->payload[0] == HSB_SAFE_POSE || f->payload[0] == HSB_SAFE_DETACH) {
        go_safe(b, f->payload[0]);
        b->flags |= HSB_FLAG_SAFE;
      } else {
        result = reject_range(b);
      }
      break;
    default:
      b->type_errors++;
      result = HSB_RESULT_BAD_TYPE;
  }
  if (result == HSB_RESULT_OK || result == HSB_RESULT_CLAMPED) {
    b->last_valid_ms = b->now_ms;
    b->last_seq = f->seq;
  }
  send_status(b, f->seq, f->type, result);
}

int hsb_board_config_valid(const hsb_board_config *cfg) {
  if (cfg->channels < 1 || cfg->channels > HSB_MAX_CHANNELS) return 0;
  for (uint8_t ch = 0; ch < cfg->channels; ++ch) {
    if (cfg->min_us[ch] < HSB_PULSE_MIN_US || cfg->min_us[ch] >= cfg->max_us[ch] ||
        cfg->max_us[ch] > HSB_PULSE_MAX_US)
      return 0;
    if (cfg->safe_us[ch] < cfg->min_us[ch] || cfg->safe_us[ch] > cfg->max_us[ch]) return 0;
  }
  return cfg->watchdog_action == HSB_SAFE_POSE || cfg->watchdog_action == HSB_SAFE_DETACH;
}

void hsb_board_init(hsb_board *b, const hsb_board_config *cfg, uint32_t now_ms, hsb_reply_cb reply, void *ctx) {
  memset(b, 0, sizeof(*b));
  b->cfg = *cfg;
  b->reply = reply;
  b->reply_ctx = ctx;
  hsb_parser_init(&b->parser, handle, b);
  b->last_valid_ms = now_ms;
  b->now_ms = now_ms;
  b->outputs_changed = 1;  // all detached
  send_status(b, 0, 0, HSB_RESULT_BOOT);
}

void hsb_board_receive(hsb_board *b, const uint8_t *data, size_t n, uint32_t now_ms) {
  b->now_ms = now_ms;
  for (size_t i = 0; i < n; ++i) hsb_parser_feed(&b->parser, data[i], now_ms);
}

void hsb_board_poll(hsb_board *b, uint32_t now_ms) {
  b->now_ms = now_ms;
  hsb_parser_expire(&b->parser, now_ms);
  if (b->cfg.watchdog_ms > 0 && attached(b) && !(b->flags & HSB_FLAG_WATCHDOG) &&
      (uint32_t)(now_ms - b->last_valid_ms) > (uint32_t)b->cfg.watchdog_ms) {
    go_safe(b, b->cfg.watchdog_action);
    b->watchdog_trips++;
    b->flags |= HSB_FLAG_WATCHDOG | HSB_FLAG_SAFE;
    send_status(b, b->last_seq, 0, HSB_RESULT_WATCHDOG);
  }
}
