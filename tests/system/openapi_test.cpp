// SPDX-License-Identifier: MIT
// tests/system/openapi_test.cpp: the server serves its OpenAPI document (docs/openapi.yaml,
// built into the binary as JSON) at GET /openapi.json, tagged like every GET. That the
// document is the same as docs/openapi.yaml, and that every answer of the system tests
// follows it, is system_openapi_answers' check (tests/support/openapi_check.py).
#include "support/system_test.hpp"

// The cases of this file, apart from the other files compiled with it (tests/CMakeLists.txt).
namespace openapi_test {

using namespace seatlock::testing;

TEST_CASE("GET /openapi.json answers the OpenAPI 3.1 document, and 304 while it is unchanged") {
    TicketingServer server(on(MemoryStorage{}));
    INFO(server.log());
    auto client = server.client();

    const auto reply = client.get("/openapi.json");
    REQUIRE_MESSAGE(reply.status == 200, reply.body);
    CHECK(reply.header("Content-Type") == "application/json");
    const auto document = reply.json().as_object();
    CHECK(document.at("openapi").as_string() == "3.1.0");
    const auto& paths = document.at("paths").as_object();
    for (const char* path : {"/openapi.json", "/events/{event}/seats", "/events/{event}/holds",
                             "/holds/{token}/confirm", "/orders/{order}/cancel"}) {
        CAPTURE(path);
        CHECK(paths.contains(path));
    }
    CHECK(document.at("components").as_object().at("schemas").as_object().contains("Error"));

    const std::string tag = reply.header("ETag");
    REQUIRE(!tag.empty());
    const auto unchanged = client.send("GET", "/openapi.json", "", {{"If-None-Match", tag}});
    CHECK(unchanged.status == 304);
    CHECK(unchanged.body.empty());

    const auto posted = client.post("/openapi.json", "{}", std::nullopt);
    CHECK(posted.status == 405);
    CHECK(posted.header("Allow") == "GET");
}

}  // namespace openapi_test
