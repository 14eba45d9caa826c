// SPDX-License-Identifier: Apache-2.0
// config/parse.cpp: walks the tokens pair by pair, hands each value to its key's row in the
// table (keys.h), and turns every problem into a Diagnostic; once the string is read, checks the
// rules that tie two keys (expandable segments' page size, the inactive garbage collection).
// Grammar recovery lives here; the rules of one value do not (key_values.cpp,
// number_readers.cpp), nor does tokenizing (tokenizer.cpp).
#include "config/parse.h"

#include <algorithm>

#include "config/key_values.h"
#include "config/keys.h"
#include "config/tokenizer.h"

namespace cudapool::config {

namespace {

class Parser {
 public:
  explicit Parser(std::string_view conf)
      : tokens_(tokenize(conf)), occurrences_(key_table().size(), 0) {}

  ParseResult run() {
    split_pairs();
    check_expandable_page();
    note_inactive_gc_threshold();
    note_inactive_expandable_handle();
    if (suppressed_diagnostics_ > 0) {
      Diagnostic summary;
      summary.detail =
          "further " + std::to_string(suppressed_diagnostics_) + " diagnostics suppressed";
      result_.diagnostics.push_back(std::move(summary));
    }
    if (suppressed_notes_ > 0) {
      result_.notes.push_back(
          {"", "further " + std::to_string(suppressed_notes_) + " notes suppressed"});
    }
    return std::move(result_);
  }

 private:
  // Pairs are separated by ',' outside brackets. One trailing ',' is accepted, as PyTorch does;
  // any other empty pair is a stray comma.
  void split_pairs() {
    const std::size_t n = tokens_.size();
    std::size_t depth = 0;
    std::size_t pair_begin = 0;
    std::size_t pair_index = 0;
    for (std::size_t i = 0; i <= n; ++i) {
      const bool at_end = i == n;
      if (!at_end) {
        const TokenKind kind = tokens_[i].kind;
        if (kind == TokenKind::kOpen) ++depth;
        if (kind == TokenKind::kClose && depth > 0) --depth;
        if (kind != TokenKind::kComma || depth > 0) continue;
      }
      if (pair_begin < i) {
        pair(pair_begin, i);
      } else if (!at_end && full()) {
        suppress();
      } else if (!at_end) {
        Diagnostic d;
        d.value = ",";
        d.detail = pair_index == 0 ? "stray ',' at the start" : "stray ',': no key:value before it";
        report(std::move(d));
      }
      pair_begin = i + 1;
      ++pair_index;
    }
  }

  // One pair: tokens [begin, end), not empty, with no ',' outside brackets.
  void pair(std::size_t begin, std::size_t end) {
    const Token& first = tokens_[begin];
    if (first.kind != TokenKind::kWord) {
      if (full()) return suppress();
      Diagnostic d;
      d.value = text(begin, end);
      d.detail = first.kind == TokenKind::kColon ? "missing key before ':'"
                                                 : "expected a key, found '" + first.text + "'";
      report(std::move(d));
      return;
    }
    const std::string_view written_key = first.text;
    if (written_key.find('=') != std::string_view::npos) {
      equals_instead_of_colon(begin, end);
      return;
    }
    const bool has_colon = end - begin >= 2 && tokens_[begin + 1].kind == TokenKind::kColon;
    const std::size_t value_begin = has_colon ? begin + 2 : begin + 1;
    const KeyInfo* key = find_key(written_key);
    if (key == nullptr) {
      if (full()) return suppress();  // spares the edit distances on huge inputs
      report(
          {shorten(written_key), text(value_begin, end), "", "", unknown_key_detail(written_key)});
      return;
    }
    const auto row = static_cast<std::size_t>(key - key_table().data());
    ++occurrences_[row];
    if (!has_colon) {
      reject(*key, written_key, text(value_begin, end),
             end - begin == 1
                 ? "missing ':' and value"
                 : "expected ':' after the key, found '" + tokens_[begin + 1].text + "'");
      return;
    }
    RawValue value;
    const std::string shape_problem = shape(*key, value_begin, end, value);
    const std::string value_text = text(value_begin, end);
    if (!shape_problem.empty()) {
      reject(*key, written_key, value_text, shape_problem);
      return;
    }
    Problems problems;
    const Options before = result_.options;
    key->apply(value, result_.options, problems);
    if (!problems.empty()) {
      result_.options = before;  // apply() promises this already; keep it true regardless
      for (std::string& problem : problems) {
        reject(*key, written_key, value_text, std::move(problem));
      }
      return;
    }
    accepted(*key, row, written_key, value, value_text);
  }

  // Sorts the value tokens [begin, end) into one word or one bracketed list; returns what is
  // wrong with their shape, or "" (then `value` is filled in).
  std::string shape(const KeyInfo& key, std::size_t begin, std::size_t end, RawValue& value) {
    if (begin == end) return "missing value";
    const Token& first = tokens_[begin];
    if (first.kind == TokenKind::kWord) {
      if (end - begin > 1) return "unexpected '" + tokens_[begin + 1].text + "' after the value";
      value.word = first.text;
      return "";
    }
    if (first.kind != TokenKind::kOpen) return "expected a value, found '" + first.text + "'";
    if (!accepts_list(key.kind)) return "a list is not accepted here";
    std::size_t depth = 0;
    std::size_t close = begin;
    for (; close < end; ++close) {
      if (tokens_[close].kind == TokenKind::kOpen) ++depth;
      if (tokens_[close].kind == TokenKind::kClose && --depth == 0) break;
    }
    if (close == end) return "list not terminated (missing ']')";
    if (close + 1 != end) return "unexpected text after ']'";
    value.is_list = true;
    value.tokens = &tokens_;
    value.begin = begin + 1;
    value.end = close;
    return "";
  }

  // "key=value": the value is not applied.
  void equals_instead_of_colon(std::size_t begin, std::size_t end) {
    const std::string_view written = tokens_[begin].text;
    const std::size_t eq = written.find('=');
    const std::string_view left = written.substr(0, eq);
    std::string value(written.substr(eq + 1, kMaxQuotedChars + 1));
    value += text(begin + 1, end);
    value = shorten(value);
    const std::string use_colon = "use ':' between key and value, not '='";
    if (const KeyInfo* key = find_key(left)) {
      ++occurrences_[static_cast<std::size_t>(key - key_table().data())];
      reject(*key, left, value, use_colon);
    } else if (full()) {
      suppress();
    } else {
      report({shorten(left), value, "", "", unknown_key_detail(left) + "; " + use_colon});
    }
  }

  void reject(const KeyInfo& key, std::string_view written_key, std::string value,
              std::string detail) {
    if (full()) return suppress();
    report({shorten(written_key), std::move(value), std::string(key.accepted),
            key.render(result_.options), std::move(detail)});
  }

  void accepted(const KeyInfo& key, std::size_t row, std::string_view written_key,
                const RawValue& value, const std::string& value_text) {
    const std::string name(key.name);
    if (std::find(result_.set_keys.begin(), result_.set_keys.end(), name) ==
        result_.set_keys.end()) {
      result_.set_keys.push_back(name);
    }
    if (occurrences_[row] > 1) {
      report({shorten(written_key), value_text, "", key.render(result_.options),
              "given more than once; the last value is used"});
    }
    if (key.remark != nullptr) {
      Problems remarks;
      const std::size_t room = full() ? 0 : kMaxDiagnostics - result_.diagnostics.size();
      suppressed_diagnostics_ += key.remark(value, remarks, room);
      const std::string kept = remarks.empty() ? "" : key.render(result_.options);
      for (std::string& remark : remarks) {
        report({shorten(written_key), value_text, "", kept, std::move(remark)});
      }
    }
    if (key.pytorch_only) {
      note({name,
            shorten(written_key) + ":" + value_text + " is a PyTorch-only setting and is ignored"});
    }
  }

  // With expandable segments large_segment_size_mb is the large pool's page, which the driver
  // maps only in whole pages of its own (kDevicePageBytes): an odd number of MiB would make every
  // large request fail with a driver error (PyTorch's too). Reported on the key, as a value out
  // of range, once the whole string is read (the two keys come in any order); the default stays.
  void check_expandable_page() {
    Options& o = result_.options;
    if (!o.expandable_segments || o.large_segment_size % kDevicePageBytes == 0) return;
    const KeyInfo* key = find_key("large_segment_size_mb");
    const std::string value = key->render(o);
    o.large_segment_size = Options{}.large_segment_size;
    reject(*key, key->name, value,
           "with expandable_segments:True it is the page size, and the driver maps memory in "
           "pages of 2 MiB: an even number of MiB");
  }

  // PyTorch runs the garbage collection only when a memory fraction below 1 is set.
  void note_inactive_gc_threshold() {
    const Options& o = result_.options;
    if (o.garbage_collection_threshold > 0.0 && o.per_process_memory_fraction >= 1.0) {
      const KeyInfo* gc = find_key("garbage_collection_threshold");
      note({std::string(gc->name),
            std::string(gc->name) + ":" + gc->render(o) +
                " has no effect while per_process_memory_fraction is 1 (PyTorch collects only "
                "under a memory fraction below 1)"});
    }
  }

  // expandable_handle_mb sizes the handles of expandable segments' pages: nothing without them.
  void note_inactive_expandable_handle() {
    const Options& o = result_.options;
    if (o.expandable_handle != 0 && !o.expandable_segments) {
      const KeyInfo* key = find_key("expandable_handle_mb");
      note({std::string(key->name), std::string(key->name) + ":" + key->render(o) +
                                        " has no effect while expandable_segments is False"});
    }
  }

  static std::string unknown_key_detail(std::string_view written_key) {
    const std::string_view suggestion = closest_key(written_key);
    if (suggestion.empty()) return "unknown key";
    return "unknown key; did you mean '" + std::string(suggestion) + "'?";
  }

  std::string text(std::size_t begin, std::size_t end) const {
    return shorten(join_tokens(tokens_, begin, end, kMaxQuotedChars));
  }

  bool full() const { return result_.diagnostics.size() >= kMaxDiagnostics; }
  void suppress() { ++suppressed_diagnostics_; }

  void report(Diagnostic d) {
    if (full()) return suppress();
    result_.diagnostics.push_back(std::move(d));
  }

  void note(Note n) {
    if (result_.notes.size() < kMaxDiagnostics) {
      result_.notes.push_back(std::move(n));
    } else {
      ++suppressed_notes_;
    }
  }

  std::vector<Token> tokens_;
  std::vector<unsigned> occurrences_;  // per table row: times the key was given
  ParseResult result_;
  std::size_t suppressed_diagnostics_ = 0;
  std::size_t suppressed_notes_ = 0;
};

}  // namespace

ParseResult parse_conf(std::string_view conf) {
  return Parser(conf).run();
}

}  // namespace cudapool::config
