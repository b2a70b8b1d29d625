// jinja2's symbol analysis of frames (jinja2/idtracking.py semantics),
// reduced to what changes a rendering: which names each frame makes its own
// variables, undefined until assigned (FrameLocals in ast.h).
#pragma once

#include "core/jinja/ast.h"

namespace prepack::jinja {

// Fills the FrameLocals of every statement with a frame of its own, and
// returns the template's (the root frame's).
FrameLocals AnalyzeFrames(Body& root);

}  // namespace prepack::jinja
