// The canonical label string of usage rows (model/usage_ledger.h).
#include "model/usage_ledger.h"

#include <algorithm>

#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace trainctl::sched {
namespace usage_labels_internal {

void AppendEscaped(const std::string& text, std::string* out) {
  for (char c : text) {
    if (c == '%') {
      out->append("%25");
    } else if (c == ',') {
      out->append("%2C");
    } else if (c == '=') {
      out->append("%3D");
    } else {
      out->push_back(c);
    }
  }
}

std::string Unescape(absl::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      const absl::string_view code = text.substr(i + 1, 2);
      if (code == "25") {
        out.push_back('%');
      } else if (code == "2C") {
        out.push_back(',');
      } else if (code == "3D") {
        out.push_back('=');
      } else {
        out.append(text.data() + i, std::min<size_t>(3, text.size() - i));
      }
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

}  // namespace usage_labels_internal

std::string EncodeUsageLabels(const std::map<std::string, std::string>& labels) {
  std::string out;
  for (const auto& [key, value] : labels) {
    if (!out.empty()) out.push_back(',');
    usage_labels_internal::AppendEscaped(key, &out);
    out.push_back('=');
    usage_labels_internal::AppendEscaped(value, &out);
  }
  return out;
}

std::map<std::string, std::string> DecodeUsageLabels(const std::string& encoded) {
  std::map<std::string, std::string> out;
  if (encoded.empty()) return out;
  for (absl::string_view pair : absl::StrSplit(encoded, ',')) {
    const size_t eq = pair.find('=');
    if (eq == absl::string_view::npos) continue;
    out[usage_labels_internal::Unescape(pair.substr(0, eq))] =
        usage_labels_internal::Unescape(pair.substr(eq + 1));
  }
  return out;
}

}  // namespace trainctl::sched
