// hand_servo_driver serial protocol: CRC, frame encoder, streaming parser.
// Portable C++ (no Arduino headers, no heap, no STL): builds with avr-g++ for the board and with
// g++ on the host, where firmware/host_test/host_test.cpp checks it against the shared vectors
// (firmware/test_vectors.txt) that the Python implementation (hand_servo_driver/protocol.py)
// passes too. Normative spec: the package README, section "Serial protocol".
//
// Frame, little-endian:
//   A5 5A | type u8 | seq u16 | len u8 | payload[len] | crc16 u16 (CCITT-FALSE over type..payload)
#ifndef HSB_PROTOCOL_H
#define HSB_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

#define HSB_SYNC0 0xA5
#define HSB_SYNC1 0x5A
#define HSB_HEADER_LEN 6
#define HSB_CRC_LEN 2
#define HSB_MAX_PAYLOAD 48
#define HSB_MAX_FRAME (HSB_HEADER_LEN + HSB_MAX_PAYLOAD + HSB_CRC_LEN)
#define HSB_FRAME_TIMEOUT_MS 50UL
#define HSB_PULSE_MIN_US 500
#define HSB_PULSE_MAX_US 2500
#define HSB_MAX_CHANNELS 16

// message types
#define HSB_MSG_SET_PULSES 0x01
#define HSB_MSG_HEARTBEAT 0x02
#define HSB_MSG_SAFE 0x03
#define HSB_MSG_STATUS 0x81

#define HSB_SAFE_POSE 0
#define HSB_SAFE_DETACH 1

// STATUS result codes
#define HSB_RESULT_OK 0
#define HSB_RESULT_CLAMPED 1
#define HSB_RESULT_BAD_RANGE 2
#define HSB_RESULT_BAD_LENGTH 3
#define HSB_RESULT_BAD_TYPE 4
#define HSB_RESULT_WATCHDOG 5
#define HSB_RESULT_BOOT 6

// STATUS flags
#define HSB_FLAG_ATTACHED 0x01
#define HSB_FLAG_WATCHDOG 0x02
#define HSB_FLAG_SAFE 0x04

#define HSB_STATUS_LEN 26

struct hsb_frame {
  uint8_t type;
  uint16_t seq;
  uint8_t len;
  uint8_t payload[HSB_MAX_PAYLOAD];
};

typedef void (*hsb_frame_cb)(void *ctx, const hsb_frame *frame);

// Streaming parser. Counters wrap at 16 bits.
struct hsb_parser {
  uint8_t buf[HSB_MAX_FRAME];
  uint8_t len;
  uint32_t last_byte_ms;
  uint16_t frames;         // CRC-valid frames delivered
  uint16_t crc_errors;     // CRC mismatch
  uint16_t length_errors;  // header len > HSB_MAX_PAYLOAD
  uint16_t timeouts;       // partial frame older than HSB_FRAME_TIMEOUT_MS
  uint16_t garbage_bytes;  // bytes skipped while hunting for the sync
  hsb_frame_cb on_frame;
  void *ctx;
};

uint16_t hsb_crc16(const uint8_t *data, size_t n, uint16_t crc = 0xFFFF);

// Writes the frame into out (capacity >= HSB_HEADER_LEN + len + HSB_CRC_LEN); returns its size, 0 if len is too big.
size_t hsb_encode(uint8_t type, uint16_t seq, const uint8_t *payload, uint8_t len, uint8_t *out);

void hsb_parser_init(hsb_parser *p, hsb_frame_cb on_frame, void *ctx);
// One received byte at time now_ms; complete frames go to on_frame (possibly several per byte after a re-scan).
void hsb_parser_feed(hsb_parser *p, uint8_t byte, uint32_t now_ms);
// Drops a partial frame whose last byte is older than HSB_FRAME_TIMEOUT_MS, then re-scans the rest.
void hsb_parser_expire(hsb_parser *p, uint32_t now_ms);

// Little-endian helpers.
inline uint16_t hsb_get_u16(const uint8_t *b) { return (uint16_t)(b[0] | ((uint16_t)b[1] << 8)); }
inline void hsb_put_u16(uint8_t *b, uint16_t v) { b[0] = (uint8_t)(v & 0xFF); b[1] = (uint8_t)(v >> 8); }

#endif  // HSB_PROTOCOL_H
