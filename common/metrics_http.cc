// The /metrics listener of metrics_http.h, on cpp-httplib.
#include "common/metrics_http.h"

#include <httplib.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/http_listen.h"
#include "common/metrics.h"

namespace trainctl::metrics {

MetricsHttpServer::MetricsHttpServer(std::string listen, std::function<std::string()> expose,
                                     std::string flag)
    : listen_(std::move(listen)), expose_(std::move(expose)), flag_(std::move(flag)) {}

MetricsHttpServer::~MetricsHttpServer() { Stop(); }

absl::StatusOr<int> MetricsHttpServer::Start() {
  http_ = std::make_unique<httplib::Server>();
  // A scrape every few seconds needs few threads.
  http_->new_task_queue = [] { return new httplib::ThreadPool(2); };
  http_->set_keep_alive_timeout(2);
  http_->set_read_timeout(10);
  std::function<std::string()> expose = expose_;
  http_->Get("/metrics", [expose](const httplib::Request&, httplib::Response& res) {
    res.set_header("Cache-Control", "no-store");
    res.set_content(expose(), Registry::kContentType);
  });
  absl::StatusOr<int> port = BindHttp(*http_, listen_, absl::StrCat("metrics (", flag_, ")"));
  if (!port.ok()) return port.status();
  thread_ = std::thread([this] { http_->listen_after_bind(); });
  return port;
}

void MetricsHttpServer::Stop() {
  if (http_ != nullptr) http_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace trainctl::metrics
