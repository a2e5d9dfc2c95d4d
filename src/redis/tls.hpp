// SPDX-License-Identifier: MIT
// src/redis/tls.hpp: TLS to Redis (RedisOptions::tls) for the pipelined connections: the
// OpenSSL context a backend's connections share (trusted CAs, client certificate), what
// each new connection sets before its handshake (SNI, the name to verify), and the words
// a failed handshake is reported in.
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <boost/system/error_code.hpp>
#include <memory>
#include <seatlock/backends/redis.hpp>
#include <string>

namespace seatlock::redis_detail {

/// The context of `tls` (enabled): TLS 1.2 or later, the server verified unless
/// tls.verify is false. Throws seatlock::Error (invalid_argument) naming the file and
/// OpenSSL's reason when a CA, certificate or key cannot be loaded, or the key does not
/// match the certificate.
std::shared_ptr<boost::asio::ssl::context> make_tls_context(const RedisTls& tls);

/// Before one connection's handshake: SNI (for a name, not an address) and, when
/// verifying, the DNS name or IP address the certificate must carry: tls.server_name, or
/// `host` when it is empty. Throws std::bad_alloc only.
void prepare_tls_connection(SSL* ssl, const RedisTls& tls, const std::string& host);

/// Why a handshake failed: OpenSSL's error, and when the server's certificate did not
/// verify, OpenSSL's verify error string (X509_verify_cert_error_string).
std::string tls_handshake_failure(SSL* ssl, const boost::system::error_code& ec);

}  // namespace seatlock::redis_detail
