#include "cli/usage.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace trainctl::cli {

std::string FormatUsage(absl::string_view header, const std::vector<FlagSpec>& globals,
                        const std::vector<CommandSpec>& commands) {
  std::string out = absl::StrCat(header, "\n\nUsage:\n  trainctl [flags] COMMAND [ARGS]\n\n");
  absl::StrAppend(&out, "Commands:\n");
  size_t width = 0;
  for (const CommandSpec& c : commands) width = std::max(width, c.name.size());
  for (const CommandSpec& c : commands) {
    absl::StrAppend(&out, "  ", c.name, std::string(width - c.name.size() + 3, ' '), c.summary,
                    "\n");
  }
  absl::StrAppend(&out, "\nGlobal flags:\n", FormatFlags(globals));
  absl::StrAppend(&out,
                  "\nExit status: 0 on success; 1 when `wait` sees the job end FAILED or "
                  "CANCELLED;\n2 on any error (usage, bad spec, server error, timeout).\n\n"
                  "Run 'trainctl COMMAND --help' for the flags of a command.\n");
  return out;
}

std::string FormatCommandUsage(const CommandSpec& command, const std::vector<FlagSpec>& globals) {
  std::string out = absl::StrCat("Usage:\n  trainctl ", command.name);
  if (!command.args.empty()) absl::StrAppend(&out, " ", command.args);
  absl::StrAppend(&out, " [flags]\n\n", command.summary, "\n");
  if (!command.details.empty()) absl::StrAppend(&out, "\n", command.details, "\n");
  if (!command.flags.empty()) absl::StrAppend(&out, "\nFlags:\n", FormatFlags(command.flags));
  absl::StrAppend(&out, "\nGlobal flags:\n", FormatFlags(globals));
  return out;
}

}  // namespace trainctl::cli
