// The agent's container image cache: replicas that name an image run on a read-only root
// unpacked once per image digest and host (runc, with a per-replica overlay above it). Images are
// pulled with skopeo and unpacked with umoci, Debian's own tools (packages skopeo, umoci); the
// cache keeps what it pulled, pins what live replicas use, and evicts the least recently used of
// the rest when it outgrows its limit.
//
// Layout under Options::dir (--image-dir; created, mode 0711; blobs/, oci/ and tmp/ 0700,
// rootfs/ 0711):
//   state.json          the cache's record: each image's digest, the refs last resolved to it,
//                       its last use, sizes, blobs and config. Replaced atomically (rename) at
//                       every change; what it lacks is rebuilt from the trees below.
//   blobs/sha256/<hex>  every image's blobs (manifests, configs, layers), shared: skopeo copies
//                       with --dest-shared-blob-dir, so a layer two images share is downloaded
//                       and stored once.
//   oci/<hex>/          one OCI image layout per image (oci-layout, index.json naming it
//                       "image"), its blobs/ a symlink to ../../blobs: what umoci unpacks.
//   rootfs/<hex>/       the unpacked root, owned by the image's owners (root: umoci unpack keeps
//                       them; --rootless when the agent is not root). Replicas use it only as an
//                       overlay lowerdir and never write to it.
//   tmp/                pulls in progress (pull-XXXXXX/: skopeo's layout, umoci's bundle, the 0600
//                       credentials file), trees being deleted. Emptied at construction.
// <hex> is the registry's manifest digest (the one "repo@sha256:<hex>" names; for a multi-platform
// image, the index's), not the one skopeo's converted manifest in oci/<hex>/ may have.
// An image is complete once rootfs/<hex> is there: umoci unpacks into tmp/ and the root is
// renamed into place. At construction, rootfs/<hex> trees with an oci/<hex> but no record are
// taken back (read again from their layout: an agent that died before writing state.json), other
// leftovers (rootfs/ without oci/, oci/ without rootfs/, blobs no image needs) are removed.
//
// Pulls: a tag is resolved with `skopeo inspect --raw` (the digest is the SHA-256 of the
// manifest's bytes), then `skopeo copy docker://REPO@DIGEST oci:LAYOUT:image` copies exactly
// that; a reference by digest skips the inspect. With kIfNotPresent, a tag the cache resolved
// before is taken from its record without touching the registry; a digest is always taken from
// the cache when present, whatever the policy; kAlways resolves the tag again and reuses the
// unpacked root when the digest is unchanged. Concurrent Acquires of one reference share one pull
// (and its result or error); pulls of two references that resolve to one digest share its copy
// and unpack; callers that join a pull share its credentials and its outcome. The inspect and
// copy together are killed (their process group) at pull_timeout, umoci at unpack_timeout.
//
// Progress, an approximation: about every 0.5 s while a pull runs, the bytes downloaded so far
// are the sizes of skopeo's temporary blob files (oci-put-blob*, in the pull's own layout) plus
// those of the blobs that appeared in blobs/ since the copy began and that the manifest names.
// When the manifest is not known (a reference by digest, or a multi-platform index) every new
// blob counts, a concurrent pull's too. The total is the manifest's config and layer sizes, 0 when
// not known. Layers already in blobs/ are not downloaded again and count in neither; a Docker
// config skopeo converts counts in the total only.
//
// Errors (the scheduler relies on them; ClassifyPullFailure, image_pull.h):
//   INVALID_ARGUMENT  the reference is malformed, or the registry refused it: no such image, tag
//                     or digest, missing or wrong credentials. Names the image and quotes the
//                     registry's answer (skopeo's last stderr line).
//   UNAVAILABLE       the registry could not be reached or failed (connection, DNS, TLS, 5xx),
//                     or the pull timed out. Names the registry.
//   INTERNAL          anything else: umoci failed, the disk is full, the layout is broken.
//
// Pins and eviction: each Acquire pins the image until a matching Release(digest); pins live in
// memory only, so after a restart the agent Acquires again (by digest: no network) for each
// replica it adopts, before it pulls anything new. After each pull that added an image, while
// the cache's size (every rootfs plus blobs/, as du counts them) exceeds max_bytes, the unpinned
// image used least recently (its last Acquire, Prefetch or Release, persisted) is removed; the
// image just pulled and images other pulls are working on are never removed, and when only such are
// left the cache stays over its limit with a warning. A removed image's blobs go with it unless
// another image needs them; while another pull is copying, blobs are left for a later sweep (it may
// be reusing them).
//
//   ImageCache::Options options;
//   options.dir = "/var/lib/trainctl-agent/images";  // --image-dir
//   options.max_bytes = int64_t{100} << 30;           // --image-cache-gb 100
//   options.insecure_registries = {"10.0.0.5:5000"};
//   ImageCache cache(options);
//   absl::StatusOr<Image> image = cache.Acquire({"10.0.0.5:5000/team/app:1"}, on_progress);
//   ...  // runc with image->rootfs as the overlay's lowerdir
//   cache.Release(image->digest);  // once the replica is gone
//
// Credentials: ImageRequest::credentials go to skopeo in a 0600 file (--authfile) under tmp/,
// removed when the pull ends; never on a command line. Without credentials skopeo reads the
// agent's own (root's auth.json or ~/.docker/config.json), if any. A reference pulled once with
// credentials is then served from the cache to any later Acquire of it, with or without them.
//
// Thread-safe: all methods may be called from any thread; Acquire and Prefetch block while they
// pull. Destroy only once no call is in progress.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agents/image_pull.h"
#include "agents/tool_run.h"

namespace trainctl::agent {

struct ImageRequest {
  enum PullPolicy { kIfNotPresent, kAlways };
  ImageRequest() = default;
  // So that a call can read Acquire({ref}) or Acquire({ref, ImageRequest::kAlways}).
  ImageRequest(std::string ref, PullPolicy policy = kIfNotPresent, std::string credentials = "")
      : ref(std::move(ref)), policy(policy), credentials(std::move(credentials)) {}
  // "127.0.0.1:5000/team/app:1", "ubuntu:22.04", "registry.example/app@sha256:<hex>".
  std::string ref;
  PullPolicy policy = kIfNotPresent;
  // Optional: "USER:PASSWORD", or a Docker config JSON ({"auths": {"host": {"auth": ...}}}).
  std::string credentials;
};

struct Image {
  // The registry's manifest digest, "sha256:<hex>": what Release takes.
  std::string digest;
  // The unpacked root (Options::dir/rootfs/<hex>): read-only, for an overlay's lowerdir.
  std::string rootfs;
  // From the image config.
  std::vector<std::string> env;  // "K=V"
  std::string working_dir;
  std::vector<std::string> entrypoint;
  std::vector<std::string> cmd;
  std::string user;
  // The root's disk usage plus its blobs'.
  int64_t bytes = 0;
};

struct PullProgress {
  enum Stage { kResolving, kDownloading, kUnpacking };
  std::string ref;
  Stage stage = kResolving;
  // Downloaded so far (see the header comment for how it is counted).
  int64_t bytes_done = 0;
  // 0: not known.
  int64_t bytes_total = 0;
};

struct CachedImage {
  std::vector<std::string> refs;
  std::string digest;
  int64_t bytes = 0;
  absl::Time last_used;
  int pins = 0;
};

class ImageCache {
 public:
  struct Options {
    std::string dir;
    // The cache's size limit in bytes; 0: unlimited.
    int64_t max_bytes = 0;
    // HOST:PORT of registries reached over plain HTTP or unverified TLS.
    std::vector<std::string> insecure_registries;
    // A pull (inspect and copy) is killed once it has run this long.
    absl::Duration pull_timeout = absl::Minutes(30);
    // umoci unpack is killed once it has run this long.
    absl::Duration unpack_timeout = absl::Hours(1);
    // The tools; a name is looked up in PATH.
    std::string skopeo = "skopeo";
    std::string umoci = "umoci";
  };

  // Creates the layout, removes leftovers and reads state.json (see above). Failures are logged;
  // Acquire then reports them.
  explicit ImageCache(Options options);
  ImageCache(const ImageCache&) = delete;
  ImageCache& operator=(const ImageCache&) = delete;
  ~ImageCache();

  // The image `request` names, pulled and unpacked first when needed, pinned until Release.
  // `progress` (optional) is called on the caller's thread while a pull runs, including one the
  // call waits for.
  absl::StatusOr<Image> Acquire(const ImageRequest& request,
                                const std::function<void(const PullProgress&)>& progress = {})
      ABSL_LOCKS_EXCLUDED(mu_);
  // Unpins one Acquire of `digest`. An unknown digest, or one not pinned, is logged and ignored.
  void Release(const std::string& digest) ABSL_LOCKS_EXCLUDED(mu_);
  // Acquire without the pin (`trainctl node prepull`).
  absl::Status Prefetch(const ImageRequest& request) ABSL_LOCKS_EXCLUDED(mu_);
  // Every complete image, most recently used first.
  std::vector<CachedImage> List() ABSL_LOCKS_EXCLUDED(mu_);
  // Kills the tools of every pull under way and of every later one: those Acquires fail
  // (UNAVAILABLE, "cancelled") at once. For an agent that stops while pulls run.
  void CancelPulls() { cancelled_ = true; }

 private:
  // A complete image.
  struct Entry {
    StoredImage stored;
    int pins = 0;
  };
  // A pull in progress that other callers can wait for. Its fields are guarded by mu_ (the
  // annotations cannot name another object's mutex).
  struct Flight {
    bool done = false;
    absl::Status status;
    std::string digest;  // when status is ok
    int pins = 0;        // Acquires waiting for it, the starter included: pinned at the end
    PullProgress progress;
  };
  using ProgressFn = std::function<void(const PullProgress&)>;
  // Set by CancelPulls(); read by the tools' runs.
  std::atomic<bool> cancelled_{false};
  // A pull's own work: its directory under tmp/ and what it learnt so far. Used by the pulling
  // thread alone.
  struct PullJob {
    ImageRef ref;
    const ImageRequest* request = nullptr;
    std::shared_ptr<Flight> flight;         // the reference's
    std::shared_ptr<Flight> digest_flight;  // the digest's, while this job copies it
    ProgressFn progress;
    absl::Time deadline;
    std::string work;      // tmp/pull-XXXXXX
    std::string authfile;  // "" without credentials
    std::string digest;
    // From `skopeo inspect`; empty when not known.
    std::set<std::string> expected_blobs;
    int64_t total_bytes = 0;
    // The blobs present when the copy began.
    std::set<std::string> blobs_before;
    int64_t downloaded = 0;
    absl::Time last_report = absl::InfinitePast();
  };

  // The digest of `request`, pulled when needed; pinned when `pin`.
  absl::StatusOr<std::string> Obtain(const ImageRequest& request, bool pin,
                                     const ProgressFn& progress) ABSL_LOCKS_EXCLUDED(mu_);
  // The digest the cache already has for `ref` under `policy`, if any.
  const Entry* CachedLocked(const ImageRef& ref, ImageRequest::PullPolicy policy) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs the pull `flight` stands for, then completes it.
  void RunFlight(const ImageRef& ref, const ImageRequest& request,
                 const std::shared_ptr<Flight>& flight, const ProgressFn& progress)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The digest `ref` names now: the reference's own, or `skopeo inspect`'s.
  absl::StatusOr<std::string> Resolve(PullJob& job) ABSL_LOCKS_EXCLUDED(mu_);
  // skopeo copy, umoci unpack, the rename into place. The entry it makes, not yet recorded.
  absl::StatusOr<Entry> Fetch(PullJob& job) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Copy(PullJob& job) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Unpack(PullJob& job, const std::string& layout, const std::string& bundle)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The status of a failed skopeo run of `job`.
  absl::Status PullFailure(const PullJob& job, const ToolOutcome& outcome) const;
  // Waits for `flight` to be done, passing its progress on to `progress` and to `mirror`'s.
  void Wait(const std::shared_ptr<Flight>& flight, const ProgressFn& progress,
            Flight* mirror = nullptr) ABSL_LOCKS_EXCLUDED(mu_);
  // Publishes the job's progress at `stage` to its flights and calls its callback (at most every
  // 0.5 s unless `now`).
  void Report(PullJob& job, PullProgress::Stage stage, bool now) ABSL_LOCKS_EXCLUDED(mu_);
  // What the job's copy has downloaded so far.
  int64_t Downloaded(const PullJob& job) const;
  // Writes the credentials file `path` (0600, new).
  static absl::Status WriteAuthFile(const std::string& path, const std::string& content);
  std::vector<std::string> ToolEnv() const;
  bool Insecure(const std::string& registry) const;

  Image ImageOf(const Entry& entry) const;
  int64_t EntryBytes(const Entry& entry) const;
  // Removes unpinned images, least recently used first, while the cache is over max_bytes.
  // Moves what goes into tmp/; returns those paths, for DeleteTrees outside the lock.
  std::vector<std::string> EvictLocked(const std::string& keep) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves blobs no entry needs into tmp/. Only while no pull is copying.
  void SweepBlobsLocked(std::vector<std::string>* trash) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves `path` to a fresh name under tmp/ and appends that to `trash`.
  void TrashLocked(const std::string& path, std::vector<std::string>* trash)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SaveStateLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Construction: layout, leftovers, state.json.
  absl::Status Recover() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static void DeleteTrees(const std::vector<std::string>& paths);

  const Options options_;
  const std::string blob_dir_;    // dir/blobs
  const std::string oci_dir_;     // dir/oci
  const std::string rootfs_dir_;  // dir/rootfs
  const std::string tmp_dir_;     // dir/tmp
  absl::Mutex mu_;
  // Why the cache is unusable (the layout could not be made), or ok.
  absl::Status broken_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);                        // by digest
  std::map<std::string, std::shared_ptr<Flight>> ref_flights_ ABSL_GUARDED_BY(mu_);  // by Key()
  std::map<std::string, std::shared_ptr<Flight>> digest_flights_ ABSL_GUARDED_BY(mu_);
  // Digests flights are working with: never evicted.
  std::map<std::string, int> busy_ ABSL_GUARDED_BY(mu_);
  int trash_seq_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace trainctl::agent
