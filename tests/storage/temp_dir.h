// A temporary directory for the store's tests, removed with everything in it.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace trainctl::storage {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/trainctl-store-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

}  // namespace trainctl::storage
