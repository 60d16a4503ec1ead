// The web console's files (every .html, .js and .css of server/console/), embedded in trainctld
// at build time by embed_console.cmake, so the console needs no files on disk, no CDN and no
// build step of its own.
#pragma once

#include <string_view>

namespace trainctl::server::rest {

struct ConsoleAsset {
  // "/index.html", "/app.js", ...
  const char* path;
  const char* content_type;
  std::string_view body;
};

// The asset served at `path`; nullptr when there is none.
const ConsoleAsset* FindConsoleAsset(std::string_view path);

}  // namespace trainctl::server::rest
