// Host test of the firmware's protocol parser and board logic against the shared vectors.
//
//   cd firmware
//   g++ -std=c++11 -Wall -Wextra -Werror -Ihand_servo_board host_test/host_test.cpp
//       hand_servo_board/protocol.cpp hand_servo_board/board_logic.cpp -o /tmp/host_test
//   /tmp/host_test test_vectors.txt
//
// Reads firmware/test_vectors.txt with the same rules as hand_servo_driver/vectors.py (format at
// the top of that file) and prints the same summary line:
//   vectors: crc=.. frame=.. stream=.. board=.. checks=.. failed=..
// Exit code 0 only if every check passed. Bytes are fed one at a time, as the sketch does.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "board_logic.h"
#include "protocol.h"

typedef std::vector<uint8_t> Bytes;

struct Frame {
  int type;
  int seq;
  Bytes payload;
  bool operator==(const Frame &o) const { return type == o.type && seq == o.seq && payload == o.payload; }
};

static std::string hex(const Bytes &b) {
  static const char *d = "0123456789ABCDEF";
  std::string s;
  for (size_t i = 0; i < b.size(); ++i) {
    s += d[b[i] >> 4];
    s += d[b[i] & 15];
  }
  return s.empty() ? "-" : s;
}

static Bytes unhex(const std::string &s) {
  Bytes out;
  if (s == "-") return out;
  if (s.size() % 2) throw std::runtime_error("odd hex length: " + s);
  for (size_t i = 0; i < s.size(); i += 2) out.push_back((uint8_t)std::strtoul(s.substr(i, 2).c_str(), 0, 16));
  return out;
}

static Bytes encode(int type, int seq, const Bytes &payload) {
  uint8_t buf[HSB_MAX_FRAME];
  size_t n = hsb_encode((uint8_t)type, (uint16_t)seq, payload.data(), (uint8_t)payload.size(), buf);
  if (!n) throw std::runtime_error("payload too long");
  return Bytes(buf, buf + n);
}

static std::vector<std::string> split(const std::string &s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(item);
  return out;
}

// The <bytes> part of an "at" statement.
static Bytes build_bytes(const std::vector<std::string> &tok, size_t start) {
  Bytes out;
  std::vector<std::string> seg;
  for (size_t i = start; i <= tok.size(); ++i) {
    if (i < tok.size() && tok[i] != "+") {
      seg.push_back(tok[i]);
      continue;
    }
    if (seg.empty()) throw std::runtime_error("empty byte segment");
    std::vector<std::string> words, mods;
    for (size_t k = 0; k < seg.size(); ++k) (seg[k].find('=') == std::string::npos ? words : mods).push_back(seg[k]);
    const std::string &kind = words.at(0);
    Bytes b;
    if (kind == "hex") {
      b = unhex(words.at(1));
    } else if (kind == "pulses") {
      Bytes pl(1, (uint8_t)(words.size() - 2));
      for (size_t k = 2; k < words.size(); ++k) {
        std::vector<std::string> cu = split(words[k], ':');
        int ch = std::atoi(cu.at(0).c_str()), us = std::atoi(cu.at(1).c_str());
        pl.push_back((uint8_t)ch);
        pl.push_back((uint8_t)(us & 0xFF));
        pl.push_back((uint8_t)((us >> 8) & 0xFF));
      }
      b = encode(HSB_MSG_SET_PULSES, std::atoi(words.at(1).c_str()), pl);
    } else if (kind == "heartbeat") {
      b = encode(HSB_MSG_HEARTBEAT, std::atoi(words.at(1).c_str()), Bytes());
    } else if (kind == "safe") {
      b = encode(HSB_MSG_SAFE, std::atoi(words.at(1).c_str()), Bytes(1, (uint8_t)std::atoi(words.at(2).c_str())));
    } else if (kind == "msg") {
      b = encode((int)std::strtol(words.at(1).c_str(), 0, 16), std::atoi(words.at(2).c_str()), unhex(words.at(3)));
    } else {
      throw std::runtime_error("unknown byte source " + kind);
    }
    for (size_t k = 0; k < mods.size(); ++k) {
      std::string key = mods[k].substr(0, mods[k].find('=')), val = mods[k].substr(mods[k].find('=') + 1);
      if (key == "flip") {
        long bit = std::atol(val.c_str());
        b.at((size_t)(bit / 8)) ^= (uint8_t)(1u << (bit % 8));
      } else if (key == "cut") {
        b.resize(b.size() - (size_t)std::atol(val.c_str()));
      } else if (key == "slice") {
        std::vector<std::string> az = split(val, ':');
        size_t a = (size_t)std::atol(az.at(0).c_str()), z = (size_t)std::atol(az.at(1).c_str());
        b = Bytes(b.begin() + (long)a, b.begin() + (long)z);
      } else {
        throw std::runtime_error("unknown modifier " + key);
      }
    }
    out.insert(out.end(), b.begin(), b.end());
    seg.clear();
  }
  return out;
}

static std::deque<Frame> g_frames;
static std::deque<Bytes> g_replies;

static void on_frame(void *, const hsb_frame *f) {
  Frame fr;
  fr.type = f->type;
  fr.seq = f->seq;
  fr.payload.assign(f->payload, f->payload + f->len);
  g_frames.push_back(fr);
}

static void on_reply(void *, const uint8_t *frame, size_t len) { g_replies.push_back(Bytes(frame, frame + len)); }

static const char *kCounterNames[9] = {"frames", "crc_errors", "length_errors", "range_errors", "type_errors",
                                       "timeouts", "garbage_bytes", "clamped", "watchdog_trips"};

static int counter_index(const std::string &name) {
  for (int i = 0; i < 9; ++i)
    if (name == kCounterNames[i]) return i;
  return -1;
}

static std::vector<uint16_t> parse_list(const std::string &v, size_t n) {
  std::vector<std::string> parts = split(v, ',');
  std::vector<uint16_t> out;
  for (size_t i = 0; i < parts.size(); ++i) out.push_back((uint16_t)std::atoi(parts[i].c_str()));
  if (out.size() == 1) out.assign(n, out[0]);
  if (out.size() != n) throw std::runtime_error("list of wrong length: " + v);
  return out;
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "test_vectors.txt";
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "cannot open %s\n", path);
    return 2;
  }
  int n_crc = 0, n_frame = 0, n_stream = 0, n_board = 0, checks = 0, failed = 0;
  std::string mode, name, line;
  int lineno = 0;
  hsb_parser parser;
  static hsb_board board;

#define CHECK(cond, msg)                                                                  \
  do {                                                                                    \
    ++checks;                                                                             \
    if (!(cond)) {                                                                        \
      ++failed;                                                                           \
      std::printf("FAIL %s:%d: [%s] %s\n", path, lineno, name.c_str(), std::string(msg).c_str()); \
    }                                                                                     \
  } while (0)

  while (std::getline(in, line)) {
    ++lineno;
    std::string code = line.substr(0, line.find('#'));
    std::istringstream ss(code);
    std::vector<std::string> tok;
    std::string t;
    while (ss >> t) tok.push_back(t);
    if (tok.empty()) continue;
    const std::string &cmd = tok[0];
    try {
      if (cmd == "crc") {
        ++n_crc;
        Bytes d = unhex(tok.at(1));
        unsigned want = (unsigned)std::strtoul(tok.at(2).c_str(), 0, 16);
        unsigned got = hsb_crc16(d.data(), d.size());
        char msg[64];
        std::snprintf(msg, sizeof msg, "crc16 %04X != %04X", got, want);
        CHECK(got == want, msg);
      } else if (cmd == "frame") {
        ++n_frame;
        name = tok.at(1);
        Frame want;
        want.type = (int)std::strtol(tok.at(2).c_str(), 0, 16);
        want.seq = std::atoi(tok.at(3).c_str());
        want.payload = unhex(tok.at(4));
        Bytes wire = unhex(tok.at(5));
        Bytes got = encode(want.type, want.seq, want.payload);
        CHECK(got == wire, "encoded " + hex(got) + " != " + hex(wire));
        g_frames.clear();
        hsb_parser_init(&parser, on_frame, 0);
        for (size_t i = 0; i < wire.size(); ++i) hsb_parser_feed(&parser, wire[i], 0);
        CHECK(g_frames.size() == 1 && g_frames[0] == want && parser.len == 0, "parse of the frame bytes");
      } else if (cmd == "stream") {
        ++n_stream;
        mode = "stream";
        name = tok.at(1);
        g_frames.clear();
        hsb_parser_init(&parser, on_frame, 0);
      } else if (cmd == "board") {
        ++n_board;
        mode = "board";
        name = tok.at(1);
        std::string o_ch = "5", o_min = "1000", o_max = "2000", o_safe = "1000", o_wd = "500", o_act = "pose";
        for (size_t i = 2; i < tok.size(); ++i) {
          std::string k = tok[i].substr(0, tok[i].find('=')), v = tok[i].substr(tok[i].find('=') + 1);
          if (k == "channels") o_ch = v;
          else if (k == "min") o_min = v;
          else if (k == "max") o_max = v;
          else if (k == "safe") o_safe = v;
          else if (k == "watchdog_ms") o_wd = v;
          else if (k == "action") o_act = v;
          else throw std::runtime_error("unknown board option " + k);
        }
        hsb_board_config cfg;
        std::memset(&cfg, 0, sizeof cfg);
        cfg.channels = (uint8_t)std::atoi(o_ch.c_str());
        std::vector<uint16_t> mn = parse_list(o_min, cfg.channels), mx = parse_list(o_max, cfg.channels),
                              sf = parse_list(o_safe, cfg.channels);
        for (size_t i = 0; i < cfg.channels; ++i) {
          cfg.min_us[i] = mn[i];
          cfg.max_us[i] = mx[i];
          cfg.safe_us[i] = sf[i];
        }
        cfg.watchdog_ms = (uint16_t)std::atoi(o_wd.c_str());
        cfg.watchdog_action = o_act == "detach" ? HSB_SAFE_DETACH : HSB_SAFE_POSE;
        CHECK(hsb_board_config_valid(&cfg), "board configuration invalid");
        g_replies.clear();
        hsb_board_init(&board, &cfg, 0, on_reply, 0);
      } else if (cmd == "at" || cmd == "tick") {
        uint32_t now = (uint32_t)std::strtoul(tok.at(1).c_str(), 0, 10);
        Bytes data;
        if (cmd == "at") data = build_bytes(tok, 2);
        if (mode == "stream") {
          hsb_parser_expire(&parser, now);
          for (size_t i = 0; i < data.size(); ++i) hsb_parser_feed(&parser, data[i], now);
        } else {
          hsb_board_poll(&board, now);
          for (size_t i = 0; i < data.size(); ++i) hsb_board_receive(&board, &data[i], 1, now);
        }
      } else if (cmd == "frame_out") {
        Frame want;
        want.type = (int)std::strtol(tok.at(1).c_str(), 0, 16);
        want.seq = std::atoi(tok.at(2).c_str());
        want.payload = unhex(tok.at(3));
        bool ok = !g_frames.empty() && g_frames.front() == want;
        std::string got = g_frames.empty() ? std::string("none")
                                           : std::to_string(g_frames.front().type) + "/" +
                                                 std::to_string(g_frames.front().seq) + "/" + hex(g_frames.front().payload);
        if (!g_frames.empty()) g_frames.pop_front();
        CHECK(ok, "frame " + got + " != expected");
      } else if (cmd == "counters") {
        for (size_t i = 1; i < tok.size(); ++i) {
          std::string k = tok[i].substr(0, tok[i].find('='));
          long want = std::atol(tok[i].substr(tok[i].find('=') + 1).c_str());
          long got = -1;
          if (mode == "stream") {
            if (k == "frames") got = parser.frames;
            else if (k == "crc_errors") got = parser.crc_errors;
            else if (k == "length_errors") got = parser.length_errors;
            else if (k == "timeouts") got = parser.timeouts;
            else if (k == "garbage_bytes") got = parser.garbage_bytes;
          } else {
            uint16_t c[9];
            hsb_board_counters(&board, c);
            int idx = counter_index(k);
            if (idx >= 0) got = c[idx];
          }
          CHECK(got == want, "counter " + k + "=" + std::to_string(got) + " != " + std::to_string(want));
        }
      } else if (cmd == "outputs") {
        std::string got, want;
        bool ok = tok.size() - 1 == board.cfg.channels;
        for (size_t i = 1; i < tok.size() && i - 1 < board.cfg.channels; ++i) {
          uint16_t o = board.outputs[i - 1];
          std::string g = o ? std::to_string(o) : "-";
          got += g + " ";
          want += tok[i] + " ";
          ok = ok && g == tok[i];
        }
        CHECK(ok, "outputs " + got + "!= " + want);
      } else if (cmd == "status") {
        if (g_replies.empty()) {
          CHECK(false, "no reply pending");
          continue;
        }
        Bytes r = g_replies.front();
        g_replies.pop_front();
        g_frames.clear();
        hsb_parser p2;
        hsb_parser_init(&p2, on_frame, 0);
        for (size_t i = 0; i < r.size(); ++i) hsb_parser_feed(&p2, r[i], 0);
        if (g_frames.size() != 1 || g_frames[0].type != HSB_MSG_STATUS || g_frames[0].payload.size() != HSB_STATUS_LEN) {
          CHECK(false, "reply is not one STATUS frame: " + hex(r));
          g_frames.clear();
          continue;
        }
        const uint8_t *pl = g_frames[0].payload.data();
        int ack_seq = hsb_get_u16(pl), ack_type = pl[2], result = pl[3], flags = pl[4];
        int w_seq = std::atoi(tok.at(1).c_str()), w_type = (int)std::strtol(tok.at(2).c_str(), 0, 16),
            w_res = std::atoi(tok.at(3).c_str()), w_flags = std::atoi(tok.at(4).c_str());
        char msg[160];
        std::snprintf(msg, sizeof msg, "status (%d, %d, %d, %d) != (%d, %d, %d, %d)", ack_seq, ack_type, result, flags,
                      w_seq, w_type, w_res, w_flags);
        CHECK(ack_seq == w_seq && ack_type == w_type && result == w_res && flags == w_flags, msg);
        for (size_t i = 5; i < tok.size(); ++i) {
          std::string k = tok[i].substr(0, tok[i].find('='));
          long want = std::atol(tok[i].substr(tok[i].find('=') + 1).c_str());
          int idx = counter_index(k);
          long got = idx >= 0 ? hsb_get_u16(pl + 8 + 2 * idx) : -1;
          CHECK(got == want, "status counter " + k + "=" + std::to_string(got) + " != " + std::to_string(want));
        }
        CHECK(pl[5] == board.cfg.channels && hsb_get_u16(pl + 6) == board.cfg.watchdog_ms, "status channels/watchdog");
        g_frames.clear();
      } else if (cmd == "silent") {
        CHECK(g_replies.empty(), std::to_string(g_replies.size()) + " unexpected replies");
      } else if (cmd == "end") {
        if (mode == "stream") CHECK(g_frames.empty(), std::to_string(g_frames.size()) + " frames not checked");
        else CHECK(g_replies.empty(), std::to_string(g_replies.size()) + " replies not checked");
        mode.clear();
      } else {
        ++failed;
        std::printf("FAIL %s:%d: unknown statement '%s'\n", path, lineno, cmd.c_str());
      }
    } catch (const std::exception &e) {
      ++failed;
      std::printf("FAIL %s:%d: [%s] cannot run '%s': %s\n", path, lineno, name.c_str(), line.c_str(), e.what());
    }
  }
  std::printf("vectors: crc=%d frame=%d stream=%d board=%d checks=%d failed=%d\n", n_crc, n_frame, n_stream, n_board,
              checks, failed);
  return failed ? 1 : 0;
}
