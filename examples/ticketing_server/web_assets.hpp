// SPDX-License-Identifier: MIT
// web_assets.hpp: the seat-map page (examples/ticketing_server/web/), built into the
// binary: embed_assets.cmake turns each file into bytes at build time, so the server
// needs no files and no network at run time to serve it.
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

}  // namespace ticketing
