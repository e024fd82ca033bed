//===- MemoryPlanView.cpp - the memory plan as JSON, SVG or HTML ----------===//
//
// The picture is a timeline: each buffer is a rectangle spanning its live
// steps horizontally and its bytes of the arena vertically (offset 0 at the
// bottom), labelled with the ONNX node that produced it when it fits, with
// a tooltip (<title>) giving size, offset and live range. The peak step,
// where the most bytes are live, is shaded. Colours come from the buffer's
// index, so equal plans draw identically.
//
//===----------------------------------------------------------------------===//

#include "kiln/Codegen/MemoryPlanView.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace kiln;

namespace {

std::string escapeXml(llvm::StringRef s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

std::string escapeJson(llvm::StringRef s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

std::string label(const PlannedBuffer &b, size_t index) {
  return b.name.empty() ? "buffer " + std::to_string(index) : b.name;
}

std::string fixed(double v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format("%.1f", v);
  return s;
}

} // namespace

std::string kiln::memoryPlanJson(const ArtifactInfo &info) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "{\n  \"name\": \"" << escapeJson(info.name) << "\",\n"
     << "  \"arena_bytes\": " << info.arenaBytes << ",\n"
     << "  \"lower_bound_bytes\": " << info.arenaLowerBoundBytes << ",\n"
     << "  \"no_reuse_bytes\": " << info.arenaNoReuseBytes << ",\n"
     << "  \"alignment\": " << info.arenaAlignment << ",\n"
     << "  \"steps\": " << info.planSteps << ",\n"
     << "  \"peak_step\": " << info.planPeakStep << ",\n"
     << "  \"buffers\": [";
  for (size_t i = 0; i < info.plan.size(); ++i) {
    const PlannedBuffer &b = info.plan[i];
    os << (i ? "," : "") << "\n    {\"name\": \"" << escapeJson(b.name)
       << "\", \"offset\": " << b.offset << ", \"size\": " << b.size
       << ", \"first\": " << b.first << ", \"last\": " << b.last;
    if (b.inPlaceOf >= 0)
      os << ", \"in_place_of\": " << b.inPlaceOf;
    os << "}";
  }
  os << (info.plan.empty() ? "]\n}\n" : "\n  ]\n}\n");
  return s;
}

std::string kiln::memoryPlanSvg(const ArtifactInfo &info) {
  const double left = 90, top = 50, plotW = 900, plotH = 480, bottom = 40;
  unsigned steps = std::max(info.planSteps, 1u);
  uint64_t arena = std::max<uint64_t>(info.arenaBytes, 1);
  double stepW = plotW / steps, scale = plotH / static_cast<double>(arena);
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\""
     << fixed(left + plotW + 20) << "\" height=\""
     << fixed(top + plotH + bottom)
     << "\" font-family=\"sans-serif\" font-size=\"11\">\n"
     << "<title>memory plan of " << escapeXml(info.name) << "</title>\n"
     << "<text x=\"" << fixed(left) << "\" y=\"20\" font-size=\"14\">"
     << escapeXml(info.name) << ": arena " << info.arenaBytes
     << " bytes, lower bound " << info.arenaLowerBoundBytes << ", no reuse "
     << info.arenaNoReuseBytes << "</text>\n";
  // The peak step, shaded behind the buffers.
  os << "<rect class=\"peak\" x=\"" << fixed(left + info.planPeakStep * stepW)
     << "\" y=\"" << fixed(top) << "\" width=\"" << fixed(stepW)
     << "\" height=\"" << fixed(plotH)
     << "\" fill=\"#fde0dc\"><title>peak: step " << info.planPeakStep << ", "
     << info.arenaLowerBoundBytes << " bytes live</title></rect>\n"
     << "<text x=\"" << fixed(left + (info.planPeakStep + 0.5) * stepW)
     << "\" y=\"" << fixed(top - 6)
     << "\" text-anchor=\"middle\" fill=\"#c0392b\">peak</text>\n";
  for (size_t i = 0; i < info.plan.size(); ++i) {
    const PlannedBuffer &b = info.plan[i];
    double x = left + b.first * stepW, w = (b.last - b.first + 1) * stepW;
    double h = std::max(b.size * scale, 1.0);
    double y = top + plotH - (b.offset + b.size) * scale;
    unsigned hue = (i * 137) % 360;
    std::string name = label(b, i);
    os << "<g class=\"buffer\"><rect x=\"" << fixed(x) << "\" y=\"" << fixed(y)
       << "\" width=\"" << fixed(w) << "\" height=\"" << fixed(h)
       << "\" fill=\"hsl(" << hue
       << ",60%,75%)\" stroke=\"#333\" stroke-width=\"0.5\">"
       << "<title>" << escapeXml(name) << ": " << b.size << " bytes at offset "
       << b.offset << ", live steps " << b.first << "-" << b.last;
    if (b.inPlaceOf >= 0)
      os << ", in place of "
         << escapeXml(label(info.plan[b.inPlaceOf], b.inPlaceOf));
    os << "</title></rect>";
    if (h >= 12 && w >= 6.5 * name.size())
      os << "<text x=\"" << fixed(x + 3) << "\" y=\"" << fixed(y + h / 2 + 4)
         << "\">" << escapeXml(name) << "</text>";
    os << "</g>\n";
  }
  // Axes: offsets on the left, steps below.
  os << "<line x1=\"" << fixed(left) << "\" y1=\"" << fixed(top + plotH)
     << "\" x2=\"" << fixed(left + plotW) << "\" y2=\"" << fixed(top + plotH)
     << "\" stroke=\"#000\"/>\n"
     << "<line x1=\"" << fixed(left) << "\" y1=\"" << fixed(top) << "\" x2=\""
     << fixed(left) << "\" y2=\"" << fixed(top + plotH)
     << "\" stroke=\"#000\"/>\n";
  for (int t = 0; t <= 4; ++t) {
    uint64_t off = info.arenaBytes * t / 4;
    os << "<text x=\"" << fixed(left - 4) << "\" y=\""
       << fixed(top + plotH - off * scale + 4) << "\" text-anchor=\"end\">"
       << off << "</text>\n";
  }
  unsigned tick = std::max(1u, steps / 10);
  for (unsigned t = 0; t < steps; t += tick)
    os << "<text x=\"" << fixed(left + (t + 0.5) * stepW) << "\" y=\""
       << fixed(top + plotH + 14) << "\" text-anchor=\"middle\">" << t
       << "</text>\n";
  os << "<text x=\"" << fixed(left + plotW / 2) << "\" y=\""
     << fixed(top + plotH + 32)
     << "\" text-anchor=\"middle\">schedule step</text>\n"
     << "<text x=\"14\" y=\"" << fixed(top + plotH / 2)
     << "\" transform=\"rotate(-90 14 " << fixed(top + plotH / 2)
     << ")\" text-anchor=\"middle\">arena offset (bytes)</text>\n"
     << "</svg>\n";
  return s;
}

std::string kiln::memoryPlanHtml(const ArtifactInfo &info) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n<title>memory "
        "plan of "
     << escapeXml(info.name) << "</title>\n</head><body>\n"
     << "<p>Arena " << info.arenaBytes << " bytes (alignment "
     << info.arenaAlignment << "); live-set lower bound "
     << info.arenaLowerBoundBytes << "; without reuse "
     << info.arenaNoReuseBytes << "; " << info.plan.size() << " buffers over "
     << info.planSteps << " steps, peak at step " << info.planPeakStep
     << ". Hover a rectangle for its size and live range.</p>\n"
     << memoryPlanSvg(info) << "</body></html>\n";
  return s;
}
