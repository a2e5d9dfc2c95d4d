// SPDX-License-Identifier: MIT
// database_pool.hpp: DatabasePool, the thread where the server's SQLite calls run, so that
// a call waiting on the disk or on SQLite's busy timeout (another process writing the same
// file) never holds a thread that serves HTTP. A coroutine awaits a call's result:
//
//     const auto epoch = co_await pool.run([&](Database& db) { return db.storage_epoch(event); });
//
// and resumes on its own executor; an exception of the call (DatabaseError) is rethrown
// there.
//
// The database is one SQLite connection whose calls are serialised (database.hpp), so one
// thread is enough: a second would only wait for the first.
#pragma once

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <exception>
#include <type_traits>
#include <utility>

#include "database.hpp"

namespace ticketing {

class DatabasePool {
public:
    /// `db` must outlive the pool.
    explicit DatabasePool(Database& db, std::size_t threads = 1) : db_(db), threads_(threads) {}
    /// Runs the calls posted so far (see join()).
    ~DatabasePool() { join(); }
    DatabasePool(const DatabasePool&) = delete;
    DatabasePool& operator=(const DatabasePool&) = delete;

    /// Runs `call(db)` on the pool; its result, or its exception, in the awaiting coroutine.
    template <typename F>
    boost::asio::awaitable<std::invoke_result_t<F&, Database&>> run(F call) {
        using T = std::invoke_result_t<F&, Database&>;
        if constexpr (std::is_void_v<T>) {
            co_await boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&,
                                                 void(std::exception_ptr)>(
                Initiation{this}, boost::asio::use_awaitable, std::move(call));
        } else {
            co_return co_await boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&,
                                                           void(std::exception_ptr, T)>(
                Initiation{this}, boost::asio::use_awaitable, std::move(call));
        }
    }

    /// Runs every call posted so far, then ends the pool's thread: at shutdown, once nothing
    /// posts any more and before the io_context the results go to is destroyed.
    void join() { threads_.join(); }

private:
    struct Initiation {
        DatabasePool* pool;

        template <typename Handler, typename F>
        void operator()(Handler handler, F call) const {
            // The awaiting coroutine's executor is kept busy until its result is back.
            auto work = boost::asio::prefer(boost::asio::get_associated_executor(handler),
                                            boost::asio::execution::outstanding_work.tracked);
            boost::asio::post(
                pool->threads_, [db = &pool->db_, handler = std::move(handler),
                                 work = std::move(work), call = std::move(call)]() mutable {
                    using T = std::invoke_result_t<F&, Database&>;
                    std::exception_ptr error;
                    if constexpr (std::is_void_v<T>) {
                        try {
                            call(*db);
                        } catch (...) {
                            error = std::current_exception();
                        }
                        boost::asio::post(work, [handler = std::move(handler), error]() mutable {
                            std::move(handler)(error);
                        });
                    } else {
                        T value{};
                        try {
                            value = call(*db);
                        } catch (...) {
                            error = std::current_exception();
                        }
                        boost::asio::post(work, [handler = std::move(handler), error,
                                                 value = std::move(value)]() mutable {
                            std::move(handler)(error, std::move(value));
                        });
                    }
                });
        }
    };

    Database& db_;
    boost::asio::thread_pool threads_;
};

}  // namespace ticketing
