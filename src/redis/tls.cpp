// SPDX-License-Identifier: MIT
// src/redis/tls.cpp: the OpenSSL context and per-connection settings of TLS to Redis.
#include "tls.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/error.hpp>
#include <new>

namespace seatlock::redis_detail {

namespace asio = boost::asio;

namespace {

[[noreturn]] void refuse(const std::string& what, const boost::system::error_code& ec) {
    throw Error(make_error_code(errc::invalid_argument),
                "RedisOptions::tls: " + what + ": " + ec.message());
}

std::string name_of(const RedisTls& tls, const std::string& host) {
    return tls.server_name.empty() ? host : tls.server_name;
}

}  // namespace

std::shared_ptr<asio::ssl::context> make_tls_context(const RedisTls& tls) {
    auto context = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
    boost::system::error_code ec;
    if (SSL_CTX_set_min_proto_version(context->native_handle(), TLS1_2_VERSION) != 1)
        throw std::bad_alloc();
    context->set_options(
        asio::ssl::context::default_workarounds | asio::ssl::context::no_compression, ec);
    if (ec) refuse("cannot set the context's options", ec);
    if (tls.verify) {
        context->set_verify_mode(asio::ssl::verify_peer, ec);
        if (ec) refuse("cannot ask for verification", ec);
        if (!tls.ca_file.empty()) {
            context->load_verify_file(tls.ca_file, ec);
            if (ec) refuse("cannot load the CA file '" + tls.ca_file + "'", ec);
        }
        if (!tls.ca_dir.empty()) {
            context->add_verify_path(tls.ca_dir, ec);
            if (ec) refuse("cannot use the CA directory '" + tls.ca_dir + "'", ec);
        }
        if (tls.ca_file.empty() && tls.ca_dir.empty()) {
            context->set_default_verify_paths(ec);
            if (ec) refuse("cannot load the system's trusted CAs", ec);
        }
    } else {
        context->set_verify_mode(asio::ssl::verify_none, ec);
        if (ec) refuse("cannot turn verification off", ec);
    }
    if (!tls.cert_file.empty()) {
        context->use_certificate_chain_file(tls.cert_file, ec);
        if (ec) refuse("cannot load the client certificate '" + tls.cert_file + "'", ec);
        context->use_private_key_file(tls.key_file, asio::ssl::context::pem, ec);
        if (ec) refuse("cannot load the client key '" + tls.key_file + "'", ec);
        if (SSL_CTX_check_private_key(context->native_handle()) != 1) {
            refuse("the client key '" + tls.key_file + "' does not match '" + tls.cert_file + "'",
                   boost::system::error_code(static_cast<int>(ERR_get_error()),
                                             asio::error::get_ssl_category()));
        }
    }
    return context;
}

void prepare_tls_connection(SSL* ssl, const RedisTls& tls, const std::string& host) {
    const std::string name = name_of(tls, host);
    boost::system::error_code not_address;
    (void)asio::ip::make_address(name, not_address);
    const bool address = !not_address;
    // RFC 6066: SNI carries host names only, never an address.
    if (!address && SSL_set_tlsext_host_name(ssl, name.c_str()) != 1) throw std::bad_alloc();
    if (!tls.verify) return;
    if (address) {
        if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str()) != 1)
            throw std::bad_alloc();
    } else {
        SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        if (SSL_set1_host(ssl, name.c_str()) != 1) throw std::bad_alloc();
    }
}

std::string tls_handshake_failure(SSL* ssl, const boost::system::error_code& ec) {
    std::string why = "TLS handshake failed: " + ec.message();
    const long verified = SSL_get_verify_result(ssl);
    if (verified != X509_V_OK) {
        why += "; the server's certificate did not verify: ";
        why += X509_verify_cert_error_string(verified);
    }
    return why;
}

}  // namespace seatlock::redis_detail
