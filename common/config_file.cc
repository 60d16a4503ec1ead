#include "common/config_file.h"

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace trainctl {
namespace {

// "FILE:LINE: KEY: message" (yaml-cpp marks are 0-based).
absl::Status KeyError(const std::string& path, const YAML::Mark& mark, const std::string& key,
                      absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, ":", mark.line + 1, ": ", key, ": ", message));
}

const FlagSpec* FindFlag(const std::vector<FlagSpec>& flags, const std::string& name) {
  for (const FlagSpec& f : flags) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

// Levenshtein distance between two short strings.
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// " (did you mean NAME?)" for the key nearest `key` within a few edits (a typo, a transposition),
// or "".
std::string Suggest(const std::vector<FlagSpec>& flags, const std::set<std::string>& not_keys,
                    const std::string& key) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, key.size() / 4) + 1;
  for (const FlagSpec& f : flags) {
    if (not_keys.count(f.name) > 0) continue;
    const size_t d = EditDistance(key, f.name);
    if (d < best_distance) {
      best_distance = d;
      best = f.name;
    }
  }
  return best.empty() ? "" : absl::StrCat(" (did you mean ", best, "?)");
}

// The scalar form of `value` for `flag`: a scalar as written, true/false for a bool flag, a
// sequence joined with commas, a mapping as k=v pairs.
absl::StatusOr<std::string> ScalarOf(const std::string& path, const std::string& key,
                                     const FlagSpec& flag, const YAML::Node& value) {
  if (flag.kind == FlagSpec::Kind::kBool) {
    bool b = false;
    if (!value.IsScalar() || !YAML::convert<bool>::decode(value, b)) {
      return KeyError(path, value.Mark(), key, "must be true or false");
    }
    return std::string(b ? "true" : "false");
  }
  if (value.IsScalar()) return value.Scalar();
  std::vector<std::string> parts;
  if (value.IsSequence()) {
    for (const YAML::Node& item : value) {
      if (!item.IsScalar()) {
        return KeyError(path, item.Mark(), key, "a list may hold only single values");
      }
      parts.push_back(item.Scalar());
    }
  } else if (value.IsMap()) {
    for (const auto& kv : value) {
      if (!kv.first.IsScalar() || !kv.second.IsScalar()) {
        return KeyError(path, kv.first.Mark(), key, "a mapping may hold only key: value pairs");
      }
      parts.push_back(absl::StrCat(kv.first.Scalar(), "=", kv.second.Scalar()));
    }
  } else {
    return KeyError(path, value.Mark(), key, "has no value: give one, or remove the line");
  }
  return absl::StrJoin(parts, ",");
}

bool NeedsQuotes(const std::string& v) {
  if (v.empty()) return true;
  if (absl::StrContains("-?:,[]{}#&*!|>'\"%@` ", v.front()) || v.back() == ' ') return true;
  for (char c : v) {
    if (c == '#' || c == '"' || c == '\\' || c == '\n' || c == '\t' || c == '\'') return true;
  }
  return absl::StrContains(v, ": ") || absl::StrContains(v, " #");
}

std::string Quote(const std::string& v) {
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '\t') {
      out += "\\t";
      continue;
    }
    out.push_back(c);
  }
  return out + "\"";
}

}  // namespace

absl::StatusOr<ConfigFile> ReadConfigFile(const std::string& path,
                                          const std::vector<FlagSpec>& flags,
                                          const std::set<std::string>& not_keys) {
  std::ifstream in(path);
  if (!in) {
    const int err = errno;
    std::string message = absl::StrCat("cannot read config file ", path, ": ", strerror(err));
    if (err == ENOENT) return absl::NotFoundError(message);
    if (err == EACCES) return absl::PermissionDeniedError(message);
    return absl::InvalidArgumentError(message);
  }
  std::stringstream text;
  text << in.rdbuf();
  ConfigFile file;
  file.path = path;
  YAML::Node root;
  try {
    root = YAML::Load(text.str());
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ":", e.mark.line + 1, ": not valid YAML: ", e.msg));
  }
  if (root.IsNull()) return file;
  if (!root.IsMap()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": must be a mapping of flag names to values (e.g. \"log-level: debug\")"));
  }
  try {
    for (const auto& kv : root) {
      if (!kv.first.IsScalar()) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ":", kv.first.Mark().line + 1, ": a key must be a flag name"));
      }
      const std::string key = kv.first.Scalar();
      const FlagSpec* flag = FindFlag(flags, key);
      if (flag == nullptr || not_keys.count(key) > 0) {
        return KeyError(path, kv.first.Mark(), key,
                        flag == nullptr
                            ? absl::StrCat("unknown key", Suggest(flags, not_keys, key),
                                           "; the keys are the flags of --help, without \"--\"")
                            : "is a command-line action, not a setting: it cannot be set in a "
                              "config file");
      }
      if (file.lines.count(key) > 0) {
        return KeyError(path, kv.first.Mark(), key,
                        absl::StrCat("is set twice (first on line ", file.lines[key], ")"));
      }
      file.lines[key] = kv.first.Mark().line + 1;
      if (kv.second.IsNull()) {
        return KeyError(path, kv.first.Mark(), key, "has no value: give one, or remove the line");
      }
      if (flag->kind == FlagSpec::Kind::kList && kv.second.IsSequence()) {
        for (const YAML::Node& item : kv.second) {
          if (!item.IsScalar()) {
            return KeyError(path, item.Mark(), key, "a list may hold only single values");
          }
          file.args.push_back(absl::StrCat("--", key, "=", item.Scalar()));
        }
        continue;
      }
      absl::StatusOr<std::string> value = ScalarOf(path, key, *flag, kv.second);
      if (!value.ok()) return value.status();
      file.args.push_back(absl::StrCat("--", key, "=", *value));
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ":", e.mark.line + 1, ": not valid YAML: ", e.msg));
  }
  return file;
}

std::vector<std::string> MergeConfigArgs(const ConfigFile& file, const std::set<std::string>& given,
                                         const std::vector<std::string>& argv) {
  std::vector<std::string> merged;
  for (const std::string& arg : file.args) {
    const std::string key = arg.substr(2, arg.find('=') - 2);
    if (given.count(key) == 0) merged.push_back(arg);
  }
  merged.insert(merged.end(), argv.begin(), argv.end());
  return merged;
}

std::set<std::string> FlagsGiven(const ParsedArgs& parsed, const std::vector<FlagSpec>& flags) {
  std::set<std::string> given;
  for (const FlagSpec& f : flags) {
    if (parsed.IsSet(f.name)) given.insert(f.name);
  }
  return given;
}

absl::Status AttributeToFile(const absl::Status& error, const ConfigFile& file,
                             const std::set<std::string>& given) {
  absl::string_view message = error.message();
  if (!absl::StartsWith(message, "--")) return error;
  size_t end = 2;
  while (end < message.size() &&
         (std::isalnum(static_cast<unsigned char>(message[end])) || message[end] == '-')) {
    ++end;
  }
  const std::string key(message.substr(2, end - 2));
  auto line = file.lines.find(key);
  if (line == file.lines.end() || given.count(key) > 0) return error;
  return absl::Status(error.code(),
                      absl::StrCat(file.path, ":", line->second, ": ", key, ": ", message));
}

absl::Status ConfiguredArgs::Attribute(const absl::Status& error) const {
  return file ? AttributeToFile(error, *file, given) : error;
}

absl::StatusOr<ConfiguredArgs> WithConfigFile(const ParsedArgs& cmdline,
                                              const std::vector<std::string>& argv,
                                              const std::vector<FlagSpec>& flags,
                                              const std::set<std::string>& not_keys,
                                              const std::string& config_flag) {
  ConfiguredArgs out;
  out.parsed = cmdline;
  const std::string path = cmdline.Get(config_flag);
  if (path.empty()) {
    if (cmdline.IsSet(config_flag)) {
      return absl::InvalidArgumentError(absl::StrCat("--", config_flag, " needs a file"));
    }
    return out;
  }
  absl::StatusOr<ConfigFile> file = ReadConfigFile(path, flags, not_keys);
  if (!file.ok()) return file.status();
  out.given = FlagsGiven(cmdline, flags);
  ParsedArgs merged;
  // The file's arguments are well-formed ("--key=value" of known flags) and the command line
  // parsed alone: the merge parses.
  if (absl::Status s = ParseArgs(MergeConfigArgs(*file, out.given, argv), flags, {}, &merged);
      !s.ok()) {
    return s;
  }
  out.parsed = std::move(merged);
  out.file = *std::move(file);
  return out;
}

std::string FormatConfig(const std::vector<std::pair<std::string, std::string>>& entries,
                         const std::string& header) {
  std::string out;
  std::istringstream lines(header);
  for (std::string line; std::getline(lines, line);) absl::StrAppend(&out, "# ", line, "\n");
  for (const auto& [key, value] : entries) {
    if (value.empty()) {
      absl::StrAppend(&out, "# ", key, ":  (not set)\n");
    } else {
      absl::StrAppend(&out, key, ": ", NeedsQuotes(value) ? Quote(value) : value, "\n");
    }
  }
  return out;
}

std::vector<ConfigChange> DiffConfig(const std::vector<std::pair<std::string, std::string>>& before,
                                     const std::vector<std::pair<std::string, std::string>>& after,
                                     const std::function<bool(const std::string&)>& reloads) {
  std::map<std::string, std::string> old(before.begin(), before.end());
  std::vector<ConfigChange> changes;
  for (const auto& [key, value] : after) {
    const std::string was = old.count(key) > 0 ? old[key] : "";
    if (was != value) changes.push_back({key, was, value, reloads(key)});
  }
  return changes;
}

void LogConfigChanges(const std::string& program, const std::string& path,
                      const std::vector<ConfigChange>& changes) {
  if (changes.empty()) {
    spdlog::info("SIGHUP: re-read {}: nothing changed", path);
    return;
  }
  auto shown = [](const std::string& v) { return v.empty() ? std::string("(not set)") : v; };
  for (const ConfigChange& c : changes) {
    if (c.applies) {
      spdlog::info("SIGHUP: {}: {} -> {}: applied", c.key, shown(c.before), shown(c.after));
    } else {
      spdlog::warn(
          "SIGHUP: {}: {} -> {} in {}: needs a restart of {} to apply; the running {} "
          "keeps {}",
          c.key, shown(c.before), shown(c.after), path, program, program, shown(c.before));
    }
  }
}

}  // namespace trainctl
