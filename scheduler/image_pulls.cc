#include "scheduler/image_pulls.h"

#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/byte_size.h"

namespace trainctl::sched {

std::string ShortDigest(const std::string& digest) {
  const size_t colon = digest.find(':');
  const size_t keep = (colon == std::string::npos ? 0 : colon + 1) + 12;
  if (digest.size() <= keep) return digest;
  return absl::StrCat(digest.substr(0, keep), "…");
}

void ImagePulls::Prune() {
  for (auto it = runs_.begin(); it != runs_.end();) {
    auto [job, r] = jobs_->CurrentRun(it->first);
    if (job == nullptr || r->state != v1::REPLICA_STATE_STARTING) {
      it = runs_.erase(it);
    } else {
      ++it;
    }
  }
}

void ImagePulls::Report(Job* job, Replica* r, const v1::ImagePull& pull, absl::Time now,
                        Effects* fx) {
  Prune();
  if (r->state != v1::REPLICA_STATE_STARTING || pull.image().empty()) return;
  auto [it, first] = runs_.try_emplace(pull.run_id());
  Pull& p = it->second;
  if (p.done) return;  // ready already: a late or repeated report
  // The agent works on the launch: launchTimeout counts from now (see the file comment).
  r->start_time = now;
  const std::string& image = pull.image();
  if (pull.done()) {
    p.done = true;
    r->message = absl::StrCat("image ", image, " ready (", ShortDigest(pull.digest()),
                              pull.cached() ? ", cached" : "", ")");
    AddEvent(fx, now, job, r->name, r->node, "ImagePulled",
             pull.cached()
                 ? absl::StrCat("image ", image, " was on ", r->node, " already (", pull.digest(),
                                ", ", FormatDecimalBytes(pull.bytes_done()), ")")
                 : absl::StrCat("image ", image, " pulled on ", r->node, ": ", pull.digest(), ", ",
                                FormatDecimalBytes(pull.bytes_done()), " (", pull.bytes_done(),
                                " bytes)"));
  } else {
    r->message = pull.bytes_done() > 0
                     ? absl::StrCat("pulling image ", image, " (",
                                    FormatDecimalBytes(pull.bytes_done()), " so far)")
                     : absl::StrCat("pulling image ", image);
    if (first) {
      AddEvent(fx, now, job, r->name, r->node, "ImagePulling",
               absl::StrCat("pulling image ", image, " on ", r->node));
    } else if (now - p.written < kWriteInterval) {
      return;  // memory has it; the row is written with a later report
    }
  }
  p.written = now;
  Touch(job, now, fx);
  RecordRun(*job, *r, fx);
}

}  // namespace trainctl::sched
