// SPDX-License-Identifier: MIT
// tests/faults/cluster_of_servers.cpp: starting, killing and restarting the processes.
#include "cluster_of_servers.hpp"

#include <signal.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <stdexcept>

namespace seatlock::testing::faults {

std::int64_t wall_ms() {
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

Venue::Venue() {
    for (char row = 'A'; row <= 'T'; ++row) {
        for (int n = 1; n <= 10; ++n)
            seats.push_back(std::string(1, row) + "-" + std::to_string(n));
    }
}

std::string Venue::json() const {
    boost::json::array rows;
    for (char row = 'A'; row <= 'T'; ++row)
        rows.push_back({{"row", std::string(1, row)}, {"seats", 10}});
    const boost::json::object floor{{"id", zone}, {"rows", std::move(rows)}};
    const boost::json::object spec{
        {"id", event}, {"name", "Fault scenarios"}, {"zones", boost::json::array{floor}}};
    return boost::json::serialize(boost::json::object{{"events", boost::json::array{spec}}});
}

TemporaryDirectory::TemporaryDirectory() {
    char pattern[] = "/tmp/seatlock-faults-XXXXXX";
    if (!::mkdtemp(pattern)) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
}

TemporaryDirectory::~TemporaryDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
}

namespace {

std::vector<std::string> redis_flags(Persistence persistence) {
    if (persistence == Persistence::snapshot) {
        // No automatic snapshot either (RedisServer passes --save ""): only save() writes one.
        return {"--appendonly", "no", "--enable-debug-command", "yes"};
    }
    return {"--appendonly", "yes", "--appendfsync", "always", "--enable-debug-command", "yes"};
}

}  // namespace

DurableRedis::DurableRedis(Persistence persistence) : server_(redis_flags(persistence)) {
    auto reply = admin()->command({"CONFIG", "GET", "dir"});
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2)
        throw std::runtime_error("CONFIG GET dir gave no directory");
    dir_.assign(reply->element[1]->str, reply->element[1]->len);
}

std::unique_ptr<RedisAdmin> DurableRedis::admin() const {
    return std::make_unique<RedisAdmin>(port());
}

void DurableRedis::kill() {
    // RedisServer keeps its process id to itself; the server tells its own.
    const std::string info = admin()->text({"INFO", "server"});
    const std::string field = "process_id:";
    const auto at = info.find(field);
    if (at == std::string::npos) throw std::runtime_error("INFO server has no process_id");
    const pid_t pid = static_cast<pid_t>(std::stol(info.substr(at + field.size())));
    // The process stays a zombie until RedisServer reaps it: its id cannot be reused.
    if (::kill(pid, SIGKILL) != 0) throw std::runtime_error("cannot SIGKILL redis-server");
}

void DurableRedis::kill_and_restart() {
    kill();
    server_.restart();  // reaps the killed process, starts on the same port and directory
}

void DurableRedis::save() {
    admin()->expect_ok({"SAVE"});
}

void DurableRedis::kill_and_forget() {
    kill();
    server_.stop();
    std::filesystem::remove_all(std::filesystem::path(dir_) / "appendonlydir");
}

void DurableRedis::restart_empty() {
    server_.restart();
}

std::string last_chars(const std::string& text, std::size_t n) {
    return text.size() <= n ? text : "..." + text.substr(text.size() - n);
}

std::vector<std::string> server_flags(const std::string& backend, const std::string& db_path,
                                      std::chrono::seconds hold_ttl) {
    // --db given after TicketingServer's own --db: the last one counts.
    return {"--backend", backend, "--db", db_path, "--hold-ttl", std::to_string(hold_ttl.count())};
}

ServerCluster::ServerCluster() : ServerCluster(Options{}) {}

ServerCluster::ServerCluster(Options options)
    : options_(options), db_path_(dir_.path() + "/orders.db"), redis_(options.redis) {
    for (int i = 0; i < options_.servers; ++i) {
        auto flags = server_flags("redis", db_path_, options_.hold_ttl);
        flags.insert(flags.end(), {"--redis-url", redis_.url()});
        servers_.push_back(std::make_unique<TicketingServer>(
            TicketingServer::Options{std::move(flags), venue_.json()}));
        ports_.push_back(servers_.back()->port());
    }
    last_logs_.resize(servers_.size());
}

ServerCluster::~ServerCluster() {
    servers_.clear();  // before Redis and the database directory go
}

std::vector<int> ServerCluster::ports() const {
    return ports_;
}

int ServerCluster::live_port() const {
    for (std::size_t i = 0; i < servers_.size(); ++i) {
        if (servers_[i]) return ports_[i];
    }
    throw std::runtime_error("no server is running");
}

std::string ServerCluster::logs() const {
    std::string all;
    for (std::size_t i = 0; i < servers_.size(); ++i) {
        all += "--- server " + std::to_string(i) + " (port " + std::to_string(ports_[i]) + ")\n" +
               last_chars(servers_[i] ? servers_[i]->log() : last_logs_[i], 1500);
    }
    return all;
}

void ServerCluster::kill_server(std::size_t index) {
    servers_.at(index)->stop(SIGKILL);
    last_logs_[index] = servers_[index]->log() + "(killed)\n";
    servers_[index].reset();
}

}  // namespace seatlock::testing::faults
