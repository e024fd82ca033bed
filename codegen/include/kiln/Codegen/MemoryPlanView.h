//===- MemoryPlanView.h - the memory plan as JSON, SVG or HTML -*- C++ -*-===//
//
// Renders the plan kiln-plan-memory made (ArtifactInfo::plan) for
// `kilnc --emit=memory-plan`: a JSON document for scripts, and a timeline
// picture (x: schedule step, y: arena offset, one rectangle per buffer) as a
// standalone SVG or an HTML page with the SVG inline. No IR, no JavaScript;
// the output is a pure function of the plan, so it is byte-identical
// between runs.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_MEMORYPLANVIEW_H
#define KILN_CODEGEN_MEMORYPLANVIEW_H

#include "kiln/Codegen/Artifact.h"

#include <string>

namespace kiln {

std::string memoryPlanJson(const ArtifactInfo &info);
std::string memoryPlanSvg(const ArtifactInfo &info);
std::string memoryPlanHtml(const ArtifactInfo &info);

} // namespace kiln

#endif // KILN_CODEGEN_MEMORYPLANVIEW_H
