// See protocol.h. Same algorithm, rule for rule, as hand_servo_driver/protocol.py (Parser).
#include "protocol.h"

#include <string.h>

uint16_t hsb_crc16(const uint8_t *data, size_t n, uint16_t crc) {
  for (size_t i = 0; i < n; ++i) {
    crc ^= (uint16_t)data[i] << 8;
    for (uint8_t b = 0; b < 8; ++b) {
      crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
    }
  }
  return crc;
}

size_t hsb_encode(uint8_t type, uint16_t seq, const uint8_t *payload, uint8_t len, uint8_t *out) {
  if (len > HSB_MAX_PAYLOAD) return 0;
  out[0] = HSB_SYNC0;
  out[1] = HSB_SYNC1;
  out[2] = type;
  hsb_put_u16(out + 3, seq);
  out[5] = len;
  if (len) memcpy(out + HSB_HEADER_LEN, payload, len);
  uint16_t crc = hsb_crc16(out + 2, (size_t)4 + len);
  hsb_put_u16(out + HSB_HEADER_LEN + len, crc);
  return (size_t)HSB_HEADER_LEN + len + HSB_CRC_LEN;
}

void hsb_parser_init(hsb_parser *p, hsb_frame_cb on_frame, void *ctx) {
  memset(p, 0, sizeof(*p));
  p->on_frame = on_frame;
  p->ctx = ctx;
}

static void drop(hsb_parser *p, uint8_t n) {
  if (n >= p->len) {
    p->len = 0;
    return;
  }
  memmove(p->buf, p->buf + n, (size_t)(p->len - n));
  p->len = (uint8_t)(p->len - n);
}

static void process(hsb_parser *p) {
  while (p->len > 0) {
    if (p->buf[0] != HSB_SYNC0) {
      drop(p, 1);
      p->garbage_bytes++;
      continue;
    }
    if (p->len < 2) break;
    if (p->buf[1] != HSB_SYNC1) {
      drop(p, 1);
      p->garbage_bytes++;
      continue;
    }
    if (p->len < HSB_HEADER_LEN) break;
    uint8_t n = p->buf[5];
    if (n > HSB_MAX_PAYLOAD) {
      drop(p, 1);
      p->length_errors++;
      continue;
    }
    uint8_t need = (uint8_t)(HSB_HEADER_LEN + n + HSB_CRC_LEN);
    if (p->len < need) break;
    uint16_t rx = hsb_get_u16(p->buf + need - 2);
    if (hsb_crc16(p->buf + 2, (size_t)need - 4) != rx) {
      drop(p, 1);
      p->crc_errors++;
      continue;
    }
    hsb_frame f;
    f.type = p->buf[2];
    f.seq = hsb_get_u16(p->buf + 3);
    f.len = n;
    memcpy(f.payload, p->buf + HSB_HEADER_LEN, n);
    drop(p, need);
    p->frames++;
    if (p->on_frame) p->on_frame(p->ctx, &f);
  }
}

void hsb_parser_feed(hsb_parser *p, uint8_t byte, uint32_t now_ms) {
  // process() runs after every byte, so the buffer never holds a complete frame and never
  // needs more than HSB_MAX_FRAME bytes.
  p->buf[p->len++] = byte;
  p->last_byte_ms = now_ms;
  process(p);
}

void hsb_parser_expire(hsb_parser *p, uint32_t now_ms) {
  while (p->len > 0 && (uint32_t)(now_ms - p->last_byte_ms) > HSB_FRAME_TIMEOUT_MS) {
    p->timeouts++;
    drop(p, 1);
    process(p);
  }
}
