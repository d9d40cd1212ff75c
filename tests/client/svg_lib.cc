// The bench's SVG writer lives in bench/lib/ (it is no server layer, so the
// Makefile does not archive it); this file compiles it into the client test
// binary so svg_test.cc can check its output. If bench/lib gets a library of
// its own in the Makefile, link that instead and delete this file.
#include "../../bench/lib/svg.cc"
