#include "server/agent_registry.h"

#include <vector>

#include "absl/strings/str_cat.h"

namespace trainctl::server {

absl::Status AgentRegistry::Attach(const std::string& node, std::shared_ptr<AgentChannel> channel,
                                   const std::string& instance) {
  const auto now = std::chrono::steady_clock::now();
  std::shared_ptr<AgentChannel> old;
  {
    absl::MutexLock lock(&mu_);
    auto it = channels_.find(node);
    if (it != channels_.end() && it->second.channel != channel && it->second.instance != instance &&
        now - it->second.heard < takeover_after_) {
      return absl::AlreadyExistsError(absl::StrCat(
          "node ", node,
          " is connected through a live stream of another agent; a second stream takes a node "
          "over only from the same agent, or once the first has been silent for ",
          std::chrono::duration_cast<std::chrono::milliseconds>(takeover_after_).count(), "ms"));
    }
    if (it != channels_.end() && it->second.channel != channel) old = it->second.channel;
    channels_[node] = Stream{std::move(channel), instance, now};
  }
  if (old) old->Close("replaced by a newer connection from the same node");
  return absl::OkStatus();
}

bool AgentRegistry::Heard(const std::string& node, const AgentChannel* channel) {
  absl::MutexLock lock(&mu_);
  auto it = channels_.find(node);
  if (it == channels_.end() || it->second.channel.get() != channel) return false;
  it->second.heard = std::chrono::steady_clock::now();
  return true;
}

bool AgentRegistry::Detach(const std::string& node, const AgentChannel* channel) {
  absl::MutexLock lock(&mu_);
  auto it = channels_.find(node);
  if (it == channels_.end() || it->second.channel.get() != channel) return false;
  channels_.erase(it);
  return true;
}

void AgentRegistry::Disconnect(const std::string& node, const std::string& why) {
  std::shared_ptr<AgentChannel> ch;
  {
    absl::MutexLock lock(&mu_);
    auto it = channels_.find(node);
    if (it == channels_.end()) return;
    ch = std::move(it->second.channel);
    channels_.erase(it);
  }
  ch->Close(why);
}

void AgentRegistry::DisconnectAll(const std::string& why) {
  std::map<std::string, Stream> closing;
  {
    absl::MutexLock lock(&mu_);
    closing.swap(channels_);
  }
  for (auto& [node, stream] : closing) stream.channel->Close(why);
}

bool AgentRegistry::IsConnected(const std::string& node) {
  absl::MutexLock lock(&mu_);
  return channels_.count(node) > 0;
}

void AgentRegistry::Send(sched::Command cmd) {
  std::shared_ptr<AgentChannel> ch;
  {
    absl::MutexLock lock(&mu_);
    auto it = channels_.find(cmd.node);
    if (it == channels_.end()) return;
    ch = it->second.channel;
  }
  ch->Enqueue(std::move(cmd));
}

void AgentRegistry::Broadcast(const v1::SchedulerMessage& message) {
  std::vector<std::pair<std::string, std::shared_ptr<AgentChannel>>> channels;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [node, stream] : channels_) channels.emplace_back(node, stream.channel);
  }
  for (auto& [node, channel] : channels) {
    sched::Command cmd;
    cmd.node = node;
    cmd.message = message;
    channel->Enqueue(std::move(cmd));
  }
}

void AgentRegistry::RequestLog(const std::string& node, v1::ReadLog req, LogCallback done) {
  std::shared_ptr<AgentChannel> ch;
  {
    absl::MutexLock lock(&mu_);
    auto it = channels_.find(node);
    if (it != channels_.end()) {
      ch = it->second.channel;
      req.set_request_id(next_request_id_++);
      pending_logs_[req.request_id()] = {node, std::chrono::steady_clock::now() + kLogReadTimeout,
                                         std::move(done)};
    }
  }
  if (!ch) {
    done(absl::UnavailableError(
        absl::StrCat("node ", node,
                     " is not connected, so its logs cannot be read now; retry when its agent "
                     "is back")));
    return;
  }
  v1::SchedulerMessage msg;
  *msg.mutable_read_log() = std::move(req);
  ch->Send(msg);
}

void AgentRegistry::CompleteLog(const v1::LogData& data) {
  LogCallback done;
  {
    absl::MutexLock lock(&mu_);
    auto it = pending_logs_.find(data.request_id());
    if (it == pending_logs_.end()) return;  // expired already
    done = std::move(it->second.done);
    pending_logs_.erase(it);
  }
  if (!data.error().empty()) {
    done(absl::NotFoundError(data.error()));
  } else {
    done(data);
  }
}

template <typename Request, typename Callback>
std::shared_ptr<AgentChannel> AgentRegistry::Track(
    const std::string& node, Request* req, std::chrono::steady_clock::time_point deadline,
    Callback* done, std::map<uint64_t, PendingAnswer<Callback>>* pending) {
  absl::MutexLock lock(&mu_);
  auto it = channels_.find(node);
  if (it == channels_.end()) return nullptr;
  req->set_request_id(next_request_id_++);
  (*pending)[req->request_id()] = {node, deadline, std::move(*done)};
  return it->second.channel;
}

template <typename Answer, typename Callback>
void AgentRegistry::Complete(const Answer& answer,
                             std::map<uint64_t, PendingAnswer<Callback>>* pending) {
  Callback done;
  {
    absl::MutexLock lock(&mu_);
    auto it = pending->find(answer.request_id());
    if (it == pending->end()) return;  // expired already
    done = std::move(it->second.done);
    pending->erase(it);
  }
  done(answer);
}

void AgentRegistry::RequestPrepull(const std::string& node, v1::PrepullImage req,
                                   std::chrono::steady_clock::time_point deadline,
                                   PrepullCallback done) {
  std::shared_ptr<AgentChannel> ch = Track(node, &req, deadline, &done, &pending_prepulls_);
  if (!ch) {
    v1::ImagePrepulled answer;
    answer.set_error("not connected");
    return done(answer);
  }
  v1::SchedulerMessage msg;
  *msg.mutable_prepull_image() = std::move(req);
  ch->Send(msg);
}

void AgentRegistry::CompletePrepull(const v1::ImagePrepulled& answer) {
  Complete(answer, &pending_prepulls_);
}

void AgentRegistry::RequestStacks(const std::string& node, v1::DumpStacks req,
                                  std::chrono::steady_clock::time_point deadline,
                                  StacksCallback done) {
  std::shared_ptr<AgentChannel> ch = Track(node, &req, deadline, &done, &pending_stacks_);
  if (!ch) {
    v1::StacksReport answer;
    answer.mutable_stacks()->set_run_id(req.run_id());
    answer.mutable_stacks()->set_error(absl::StrCat("node ", node, " is not connected"));
    return done(answer);
  }
  v1::SchedulerMessage msg;
  *msg.mutable_dump_stacks() = std::move(req);
  ch->Send(msg);
}

void AgentRegistry::CompleteStacks(const v1::StacksReport& answer) {
  Complete(answer, &pending_stacks_);
}

template <typename Callback>
std::vector<std::pair<std::string, Callback>> AgentRegistry::TakeUnanswered(
    std::map<uint64_t, PendingAnswer<Callback>>* pending,
    std::chrono::steady_clock::time_point now) {
  std::vector<std::pair<std::string, Callback>> out;
  for (auto it = pending->begin(); it != pending->end();) {
    const bool gone = channels_.count(it->second.node) == 0;
    if (gone || now >= it->second.deadline) {
      out.push_back(
          {gone ? "its agent disconnected before it answered" : "no answer before the deadline",
           std::move(it->second.done)});
      it = pending->erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

void AgentRegistry::ExpireRequests() {
  std::vector<std::pair<std::string, LogCallback>> expired;
  std::vector<std::pair<std::string, PrepullCallback>> unanswered;
  std::vector<std::pair<std::string, StacksCallback>> no_stacks;
  {
    absl::MutexLock lock(&mu_);
    const auto now = std::chrono::steady_clock::now();
    for (auto it = pending_logs_.begin(); it != pending_logs_.end();) {
      bool gone = channels_.count(it->second.node) == 0;
      if (gone || now >= it->second.deadline) {
        expired.push_back({it->second.node, std::move(it->second.done)});
        it = pending_logs_.erase(it);
      } else {
        ++it;
      }
    }
    unanswered = TakeUnanswered(&pending_prepulls_, now);
    no_stacks = TakeUnanswered(&pending_stacks_, now);
  }
  for (auto& [node, done] : expired) {
    done(absl::UnavailableError(
        absl::StrCat("node ", node, " did not answer the log read in time; retry")));
  }
  for (auto& [why, done] : unanswered) {
    v1::ImagePrepulled answer;
    answer.set_error(why);
    done(answer);
  }
  for (auto& [why, done] : no_stacks) {
    v1::StacksReport answer;
    answer.mutable_stacks()->set_error(why);
    done(answer);
  }
}

}  // namespace trainctl::server
