#include "cli/user_config.h"

#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/config_file.h"

namespace trainctl::cli {
namespace {

std::string Env(const GetEnv& env, const char* name) {
  const char* value = env(name);
  return value == nullptr ? "" : value;
}

// "~/x" is the user's home's x.
std::string ExpandHome(const std::string& path, const GetEnv& env) {
  if (!absl::StartsWith(path, "~/")) return path;
  const std::string home = Env(env, "HOME");
  return home.empty() ? path : absl::StrCat(home, path.substr(1));
}

}  // namespace

std::string UserConfigPath(const GetEnv& env) {
  if (std::string path = Env(env, "TRAINCTL_CONFIG"); !path.empty()) return path;
  if (std::string xdg = Env(env, "XDG_CONFIG_HOME"); !xdg.empty()) {
    return absl::StrCat(xdg, "/trainctl/config.yaml");
  }
  if (std::string home = Env(env, "HOME"); !home.empty()) {
    return absl::StrCat(home, "/.config/trainctl/config.yaml");
  }
  return "";
}

absl::StatusOr<ConnectionSettings> ResolveConnection(const ParsedArgs& parsed,
                                                     const std::vector<FlagSpec>& globals,
                                                     const GetEnv& env) {
  ConnectionSettings out;
  std::map<std::string, std::string> file;
  const std::string path = UserConfigPath(env);
  if (!path.empty()) {
    std::set<std::string> not_keys;
    for (const FlagSpec& f : globals) {
      if (f.kind == FlagSpec::Kind::kBool) not_keys.insert(f.name);  // --help, --version
    }
    absl::StatusOr<ConfigFile> read = ReadConfigFile(path, globals, not_keys);
    const bool named = !Env(env, "TRAINCTL_CONFIG").empty();
    if (read.ok()) {
      out.config_path = path;
      for (const std::string& arg : read->args) {
        const size_t eq = arg.find('=');
        file[arg.substr(2, eq - 2)] = arg.substr(eq + 1);
      }
    } else if (named || !absl::IsNotFound(read.status())) {
      return read.status();
    }
  }
  auto setting = [&](const char* flag, const char* var) {
    if (std::string v = parsed.Get(flag); !v.empty()) return v;
    if (std::string v = Env(env, var); !v.empty()) return v;
    auto it = file.find(flag);
    return it == file.end() ? std::string() : ExpandHome(it->second, env);
  };
  out.server = setting("server", "TRAINCTL_SERVER");
  if (!parsed.Get("server").empty()) {
    out.server_source = "--server";
  } else if (!Env(env, "TRAINCTL_SERVER").empty()) {
    out.server_source = "TRAINCTL_SERVER";
  } else if (!out.server.empty()) {
    out.server_source = absl::StrCat("server in ", path);
  }
  out.ca = setting("ca", "TRAINCTL_CA");
  // The token and its file come from the first source that gives either.
  if (!parsed.Get("token").empty() || !parsed.Get("token-file").empty()) {
    out.token = parsed.Get("token");
    out.token_file = parsed.Get("token-file");
  } else if (!Env(env, "TRAINCTL_TOKEN").empty() || !Env(env, "TRAINCTL_TOKEN_FILE").empty()) {
    out.token = Env(env, "TRAINCTL_TOKEN");
    out.token_file = Env(env, "TRAINCTL_TOKEN_FILE");
  } else {
    out.token = file.count("token") > 0 ? file["token"] : "";
    out.token_file = file.count("token-file") > 0 ? ExpandHome(file["token-file"], env) : "";
  }
  return out;
}

}  // namespace trainctl::cli
