// Api: ClusterService.PrepullImage (see api.h), `trainctl node prepull`. Each target node's agent
// is sent PrepullImage on its stream (AgentRegistry::RequestPrepull) and the call is answered once
// every node answered ImagePrepulled or the deadline passed. Nothing waits on a thread: the
// reconcile loop is asked only which nodes are targets (a read turn), and the answers complete
// the call from the agents' streams, or from the registry's expiry after each turn.
//
// The registry's credentials come from a project secret (WorkerPool.image_pull_secret's kind),
// opened here and sent to the target agents only; the caller must be one that may submit in the
// project (admins; operators may not use a project's secrets, see docs/operators/security.md).
#include <algorithm>
#include <chrono>
#include <memory>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/names.h"
#include "common/time_util.h"
#include "scheduler/image_validation.h"
#include "scheduler/node_selection.h"
#include "server/api.h"

namespace trainctl::server {
namespace {

// PrepullImageRequest.timeout: unset or 0, and the limits.
constexpr int64_t kDefaultPrepullMs = 10 * 60'000;
constexpr int64_t kMinPrepullMs = 1'000;
constexpr int64_t kMaxPrepullMs = 3'600'000;
// The most nodes one call names.
constexpr int kMaxPrepullNodes = 4096;

// One call's results, one per target node in order, filled as they come; the last one replies.
class PrepullResults {
 public:
  PrepullResults(const std::vector<std::string>& nodes, Reply<v1::PrepullImageResponse> done)
      : left_(nodes.size()), done_(std::move(done)) {
    for (const std::string& n : nodes) resp_.add_results()->set_node(n);
  }

  // Node `i` answered (or failed with answer.error()).
  void Answer(size_t i, const v1::ImagePrepulled& answer) ABSL_LOCKS_EXCLUDED(mu_) {
    v1::PrepullImageResponse out;
    {
      absl::MutexLock lock(&mu_);
      v1::PrepullImageResponse::NodeResult* r = resp_.mutable_results(static_cast<int>(i));
      if (answer.error().empty()) {
        r->set_digest(answer.digest());
        r->set_bytes(answer.bytes());
      } else {
        r->set_error(answer.error());
      }
      if (--left_ > 0) return;
      out = std::move(resp_);
    }
    done_(std::move(out));
  }

 private:
  absl::Mutex mu_;
  v1::PrepullImageResponse resp_ ABSL_GUARDED_BY(mu_);
  size_t left_ ABSL_GUARDED_BY(mu_);
  const Reply<v1::PrepullImageResponse> done_;
};

v1::ImagePrepulled Failed(const std::string& why) {
  v1::ImagePrepulled a;
  a.set_error(why);
  return a;
}

// The request's deadline in ms: 0 gives the default. INVALID_ARGUMENT out of 1s..1h.
absl::StatusOr<int64_t> PrepullTimeoutMs(const v1::PrepullImageRequest& req) {
  const int64_t ms = DurationToMs(req.timeout());
  if (ms == 0 && req.timeout().nanos() == 0) return kDefaultPrepullMs;
  if (ms < kMinPrepullMs || ms > kMaxPrepullMs) {
    return absl::InvalidArgumentError(absl::StrCat("timeout must be 1s..1h (0: 10m), got ",
                                                   FormatDuration(std::max<int64_t>(ms, 0)),
                                                   ms < 0 ? " (negative)" : ""));
  }
  return ms;
}

// The named nodes, each once, in order. INVALID_ARGUMENT for an empty name or too many.
absl::StatusOr<std::vector<std::string>> NamedNodes(const v1::PrepullImageRequest& req) {
  if (req.nodes_size() > kMaxPrepullNodes) {
    return absl::InvalidArgumentError(
        absl::StrCat("nodes: at most ", kMaxPrepullNodes, " nodes, got ", req.nodes_size()));
  }
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (int i = 0; i < req.nodes_size(); ++i) {
    if (req.nodes(i).empty()) {
      return absl::InvalidArgumentError(absl::StrCat("nodes[", i, "] is empty: a node's name"));
    }
    if (seen.insert(req.nodes(i)).second) out.push_back(req.nodes(i));
  }
  return out;
}

// What node `node` (of the core, connected or not) cannot do, or "" when it may be asked.
std::string WhyNotTarget(const sched::Node& node) {
  if (!sched::CanRunImages(&node.labels)) {
    return absl::StrCat("it runs no images (no label ", sched::kImagesLabel, "=true)");
  }
  return "";
}

}  // namespace

absl::StatusOr<std::string> Api::PrepullCredentials(const Caller& caller,
                                                    const v1::PrepullImageRequest& req) const {
  if (req.image_pull_secret().empty() && req.project().empty()) return std::string();
  if (req.image_pull_secret().empty()) {
    return absl::InvalidArgumentError(
        "project is only for imagePullSecret: name the secret that holds the registry's "
        "credentials, or leave both out");
  }
  if (req.project().empty()) {
    return absl::InvalidArgumentError("imagePullSecret needs project: the project that holds it");
  }
  if (!IsDnsLabel(req.project(), 63)) {
    return absl::InvalidArgumentError(
        absl::StrCat("project: \"", req.project(), "\" is not a valid project name"));
  }
  // Only who may submit a job of the project that refers to the secret may use it.
  if (absl::Status s = CheckProject(caller, Permission::kSubmit, req.project()); !s.ok()) {
    return s;
  }
  if (absl::Status s = SecretsKept(); !s.ok()) return s;
  if (absl::Status s = ProjectSecrets::ValidateName(req.image_pull_secret()); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("imagePullSecret: ", s.message()));
  }
  absl::StatusOr<std::string> value = parts_.secrets->Open(req.project(), req.image_pull_secret());
  if (!value.ok()) {
    return absl::Status(value.status().code(),
                        absl::StrCat("imagePullSecret: ", value.status().message()));
  }
  return value;
}

void Api::PrepullImage(const CallContext& call, const v1::PrepullImageRequest& req,
                       Reply<v1::PrepullImageResponse> done) {
  absl::StatusOr<Caller> caller = Authorize(call, Route::kPrepullImage);
  if (!caller.ok()) return done(caller.status());
  if (req.image().empty()) {
    return done(absl::InvalidArgumentError(
        "image is required: an OCI image reference such as registry:5000/team/train:1.4"));
  }
  if (absl::Status s = sched::ValidateImageReference("image", req.image()); !s.ok()) {
    return done(s);
  }
  absl::StatusOr<int64_t> timeout_ms = PrepullTimeoutMs(req);
  if (!timeout_ms.ok()) return done(timeout_ms.status());
  absl::StatusOr<std::vector<std::string>> named = NamedNodes(req);
  if (!named.ok()) return done(named.status());
  absl::StatusOr<std::string> credentials = PrepullCredentials(*caller, req);
  if (!credentials.ok()) return done(credentials.status());
  if (parts_.registry == nullptr) {
    return done(absl::UnavailableError("this trainctld reaches no agents"));
  }
  v1::PrepullImage message;
  message.set_image(req.image());
  message.set_credentials(*std::move(credentials));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(*timeout_ms);
  parts_.loop->PostRead(
      [registry = parts_.registry, named = *std::move(named), message, deadline, done](Turn& t) {
        // The targets, and those that cannot be asked with why.
        std::vector<std::string> targets;
        std::vector<std::string> refused;
        if (named.empty()) {
          for (const auto& [name, node] : t.core.nodes()) {
            if (node.connected && WhyNotTarget(node).empty()) targets.push_back(name);
          }
          if (targets.empty()) {
            t.after_commit->push_back([done] {
              done(absl::FailedPreconditionError(absl::StrCat(
                  "no connected node can run images (label ", sched::kImagesLabel,
                  "=true): start their agents with images enabled, or name nodes with --node")));
            });
            return;
          }
          refused.assign(targets.size(), "");
        } else {
          for (const std::string& name : named) {
            const sched::Node* node = t.core.FindNode(name);
            if (node == nullptr) {
              t.after_commit->push_back([done, name] {
                done(absl::NotFoundError(
                    absl::StrCat("node ", name, " not found ('trainctl nodes' lists them)")));
              });
              return;
            }
            targets.push_back(name);
            refused.push_back(WhyNotTarget(*node));
          }
        }
        // Sent once the read turn is over, from the loop's thread; nothing here waits.
        t.after_commit->push_back([registry, targets, refused, message, deadline, done] {
          auto results = std::make_shared<PrepullResults>(targets, done);
          for (size_t i = 0; i < targets.size(); ++i) {
            if (!refused[i].empty()) {
              results->Answer(i, Failed(refused[i]));
              continue;
            }
            registry->RequestPrepull(
                targets[i], message, deadline,
                [results, i](const v1::ImagePrepulled& answer) { results->Answer(i, answer); });
          }
        });
      },
      done);
}

}  // namespace trainctl::server
