// url_library.cpp: Boost.URL, compiled into the server from its headers (Debian ships no
// libboost_url); api.cpp uses it to split request targets into decoded path segments.
#include <boost/url/src.hpp>
