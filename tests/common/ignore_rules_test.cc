// .trainctlignore's gitignore syntax: comments and escapes, negation (the last match decides),
// directory-only patterns, anchored and any-depth patterns, "**", and files under a left-out
// directory.
#include "common/ignore_rules.h"

#include <catch2/catch.hpp>

namespace trainctl {
namespace {

TEST_CASE("ignore rules: names at any depth, anchored paths and directories", "[ignore_rules]") {
  const IgnoreRules rules = IgnoreRules::Parse(
      "# checkpoints stay on the nodes\n"
      "\n"
      "*.ckpt\n"
      "/data\n"
      "logs/\n"
      "src/gen/*.py\n"
      "__pycache__/\n");
  CHECK(rules.size() == 5);
  CHECK(rules.Ignored("a.ckpt", false));
  CHECK(rules.Ignored("runs/1/a.ckpt", false));
  CHECK_FALSE(rules.Ignored("a.ckpt.txt", false));
  // Anchored: only at the top.
  CHECK(rules.Ignored("data", true));
  CHECK(rules.Ignored("data/x.bin", false));
  CHECK_FALSE(rules.Ignored("src/data", true));
  // Directory only: a file named logs stays.
  CHECK(rules.Ignored("logs", true));
  CHECK(rules.Ignored("exp/logs", true));
  CHECK(rules.Ignored("exp/logs/train.log", false));
  CHECK_FALSE(rules.Ignored("logs", false));
  // A slash in the middle anchors too; '*' stays within a segment.
  CHECK(rules.Ignored("src/gen/a.py", false));
  CHECK_FALSE(rules.Ignored("src/gen/sub/a.py", false));
  CHECK_FALSE(rules.Ignored("lib/src/gen/a.py", false));
  CHECK(rules.Ignored("pkg/__pycache__/m.pyc", false));
  CHECK_FALSE(rules.Ignored("train.py", false));
}

TEST_CASE("ignore rules: negation, escapes, '**' and left-out parents", "[ignore_rules]") {
  const IgnoreRules rules = IgnoreRules::Parse(
      "*.bin\n"
      "!keep.bin\n"
      "\\#notes\n"
      "\\!bang\n"
      "trailing\\ \n"
      "spaced   \n"
      "**/cache\n"
      "out/**\n"
      "a/**/z\n"
      "build/\n"
      "!build/keep.txt\n");
  CHECK(rules.Ignored("x.bin", false));
  CHECK_FALSE(rules.Ignored("keep.bin", false));
  CHECK_FALSE(rules.Ignored("deep/keep.bin", false));
  CHECK(rules.Ignored("#notes", false));
  CHECK(rules.Ignored("!bang", false));
  CHECK(rules.Ignored("trailing ", false));
  CHECK(rules.Ignored("spaced", false));
  CHECK(rules.Ignored("cache", true));
  CHECK(rules.Ignored("x/y/cache", false));
  CHECK(rules.Ignored("out/a/b", false));
  CHECK_FALSE(rules.Ignored("out", true));  // "/**" is what is inside
  CHECK(rules.Ignored("a/z", false));
  CHECK(rules.Ignored("a/b/c/z", false));
  CHECK_FALSE(rules.Ignored("b/a/z", false));
  // A file under a left-out directory cannot be taken back.
  CHECK(rules.Ignored("build/keep.txt", false));
  // Nothing at all: nothing left out.
  CHECK_FALSE(IgnoreRules::Parse("").Ignored("anything", false));
  CHECK(IgnoreRules::Parse("# only\n\n").size() == 0);
  // Windows line ends.
  CHECK(IgnoreRules::Parse("*.tmp\r\n").Ignored("a.tmp", false));
}

}  // namespace
}  // namespace trainctl
