// A small JSON reader for the trace tests: parses a document into Value trees (objects keep their
// keys in order). Strict about syntax (RFC 8259), so that a malformed trace fails the test;
// numbers are doubles, which is exact for the trace's timestamps and ids.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace baton_test::json {

struct Value {
  enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Value> array;
  std::map<std::string, Value> object;

  bool has(const std::string& key) const { return kind == Object && object.count(key) != 0; }
  const Value& operator[](const std::string& key) const {
    static const Value null;
    auto it = object.find(key);
    return it == object.end() ? null : it->second;
  }
  const std::string& str() const { return string; }
  double num() const { return number; }
  uint64_t u64() const { return static_cast<uint64_t>(number); }
};

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  Value parse() {
    Value v = value();
    space();
    if (i_ != s_.size()) fail("text after the document");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("JSON: " + what + " at offset " + std::to_string(i_));
  }
  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t'))
      ++i_;
  }
  bool take(char c) {
    space();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!take(c)) fail(std::string("expected '") + c + "'");
  }
  bool word(const char* w) {
    const std::string x(w);
    if (s_.compare(i_, x.size(), x) != 0) return false;
    i_ += x.size();
    return true;
  }

  Value value() {
    space();
    if (i_ >= s_.size()) fail("unexpected end");
    Value v;
    const char c = s_[i_];
    if (c == '{') {
      ++i_;
      v.kind = Value::Object;
      if (take('}')) return v;
      do {
        space();
        std::string key = stringLiteral();
        expect(':');
        if (v.object.count(key)) fail("duplicate key " + key);
        v.object[key] = value();
      } while (take(','));
      expect('}');
    } else if (c == '[') {
      ++i_;
      v.kind = Value::Array;
      if (take(']')) return v;
      do v.array.push_back(value());
      while (take(','));
      expect(']');
    } else if (c == '"') {
      v.kind = Value::String;
      v.string = stringLiteral();
    } else if (word("true")) {
      v.kind = Value::Bool;
      v.boolean = true;
    } else if (word("false")) {
      v.kind = Value::Bool;
    } else if (word("null")) {
      v.kind = Value::Null;
    } else {
      v.kind = Value::Number;
      v.number = numberLiteral();
    }
    return v;
  }

  double numberLiteral() {
    const size_t start = i_;
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    auto digits = [&] {
      const size_t d = i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      if (i_ == d) fail("expected a digit");
    };
    if (i_ < s_.size() && s_[i_] == '0')
      ++i_;
    else
      digits();
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      digits();
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      digits();
    }
    return std::strtod(s_.substr(start, i_ - start).c_str(), nullptr);
  }

  std::string stringLiteral() {
    if (i_ >= s_.size() || s_[i_] != '"') fail("expected a string");
    ++i_;
    std::string out;
    for (;;) {
      if (i_ >= s_.size()) fail("unterminated string");
      const unsigned char c = static_cast<unsigned char>(s_[i_++]);
      if (c == '"') return out;
      if (c < 0x20) fail("control character in a string");
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (i_ >= s_.size()) fail("unterminated escape");
      const char e = s_[i_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          if (i_ + 4 > s_.size()) fail("short \\u escape");
          const unsigned code = static_cast<unsigned>(std::stoul(s_.substr(i_, 4), nullptr, 16));
          i_ += 4;
          // UTF-8 of the code unit (the trace escapes control characters and U+FFFD only).
          if (code < 0x80) {
            out += static_cast<char>(code);
          } else if (code < 0x800) {
            out += static_cast<char>(0xc0 | (code >> 6));
            out += static_cast<char>(0x80 | (code & 0x3f));
          } else {
            out += static_cast<char>(0xe0 | (code >> 12));
            out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (code & 0x3f));
          }
          break;
        }
        default: fail("bad escape");
      }
    }
  }

  const std::string& s_;
  size_t i_ = 0;
};

inline Value parse(const std::string& text) { return Parser(text).parse(); }

}  // namespace baton_test::json
