// SPDX-License-Identifier: MIT
// web_assets.hpp: the seat-map page (examples/ticketing_server/web/) and the OpenAPI
// document, built into the binary: embed_assets.cmake turns each file into bytes at build
// time, so the server needs no files and no network at run time to serve them.
#pragma once

#include <span>
#include <string_view>

namespace ticketing {

/// One file of the page.
struct WebAsset {
    std::string_view path;          ///< its name under web/, e.g. "app.js"
    std::string_view content_type;  ///< e.g. "text/javascript; charset=utf-8"
    std::string_view body;
};

/// Every file of the page; index.html is served at "/", the others under "/assets/".
std::span<const WebAsset> web_assets();

/// The server's OpenAPI document (docs/openapi.yaml, converted to JSON at build time by
/// yaml_to_json.py and embedded the same way): one entry, "openapi.json", served at
/// "/openapi.json".
std::span<const WebAsset> api_documents();

}  // namespace ticketing
