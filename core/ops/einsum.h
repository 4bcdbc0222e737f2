#pragma once
// Einsum's equation, parsed once for the shape function, the gradient rule and both backends'
// kernels: every operand's and the output's index letters (an ellipsis expanded to reserved
// characters, aligned from the right as numpy broadcasts it), each letter's size, and the loop that
// computes any output of the form out[...] = sum over the other letters of a product of factors
// (the forward: the output from the operands; the gradient of operand k: from dY and the other
// operands; a size-1 dim against a larger size broadcasts, and its gradient sums).
//   auto e = parseEinsum("bhid,bhjd->bhij", {4, 4});
//   auto sizes = einsumSizes(*e, {{2, 3, 5, 8}, {2, 3, 7, 8}});   // b2 h3 i5 d8 j7
//   EinsumLoop loop = einsumLoop(*e, *sizes, e->output, yShape, {{e->inputs[0], aShape}, ...});

#include "core/util/status.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace remat::core::ops {

struct EinsumEquation
{
    std::vector<std::string> inputs; ///< one letter per axis of each operand
    std::string output;              ///< one letter per output axis
    std::string letters;             ///< every distinct letter, in order of first appearance
};

inline bool isEllipsisLetter(char ch) { return static_cast<unsigned char>(ch) >= 0x80; }

inline Status einsumError(const std::string &equation, const std::string &what)
{
    return makeError(StatusCode::Unsupported, "Einsum '" + equation + "': " + what);
}

/// Parses `equation` for operands of these ranks. Spaces are ignored. Refused with a message:
/// a letter repeated within one operand or in the output (a diagonal, "ii->i"), an output
/// letter no operand has, a rank that does not match, more than 26 ellipsis dims.
inline Expected<EinsumEquation> parseEinsum(const std::string &equationIn,
                                            const std::vector<size_t> &ranks)
{
    std::string eq;
    for (char ch : equationIn)
        if (ch != ' ')
            eq += ch;
    const size_t arrow = eq.find("->");
    const std::string lhs = eq.substr(0, arrow);
    std::vector<std::string> terms;
    for (size_t start = 0;;) {
        const size_t comma = lhs.find(',', start);
        terms.push_back(lhs.substr(start, comma == std::string::npos ? comma : comma - start));
        if (comma == std::string::npos)
            break;
        start = comma + 1;
    }
    if (terms.size() != ranks.size())
        return einsumError(equationIn, std::to_string(terms.size()) + " terms for " +
                                           std::to_string(ranks.size()) + " operands");
    // The ellipsis: as many dims as the largest operand leaves over, named 'A', 'B', ...
    std::vector<size_t> ellipsisDims(terms.size(), 0);
    size_t maxEllipsis = 0;
    for (size_t t = 0; t < terms.size(); ++t) {
        const size_t dots = terms[t].find("...");
        std::string plain = terms[t];
        if (dots != std::string::npos)
            plain.erase(dots, 3);
        for (char ch : plain)
            if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')))
                return einsumError(equationIn, std::string("'") + ch + "' is not an index letter");
        if (dots == std::string::npos) {
            if (plain.size() != ranks[t])
                return einsumError(equationIn, "operand " + std::to_string(t + 1) + " has rank " +
                                                   std::to_string(ranks[t]) + ", its term " +
                                                   std::to_string(plain.size()) + " letters");
        } else {
            if (plain.size() > ranks[t])
                return einsumError(equationIn, "operand " + std::to_string(t + 1) +
                                                   " has fewer dims than letters");
            ellipsisDims[t] = ranks[t] - plain.size();
            maxEllipsis = std::max(maxEllipsis, ellipsisDims[t]);
        }
    }
    if (maxEllipsis > 26)
        return einsumError(equationIn, "too many dims under the ellipsis");
    // Ellipsis dims get characters no equation can use (0x80 and up), aligned from the right.
    auto ellipsisLetters = [&](size_t n) {
        std::string s;
        for (size_t i = maxEllipsis - n; i < maxEllipsis; ++i)
            s += char(0x80 + i);
        return s;
    };
    EinsumEquation e;
    for (size_t t = 0; t < terms.size(); ++t) {
        std::string term = terms[t];
        const size_t dots = term.find("...");
        if (dots != std::string::npos)
            term.replace(dots, 3, ellipsisLetters(ellipsisDims[t]));
        std::string seen;
        for (char ch : term) {
            if (seen.find(ch) != std::string::npos)
                return einsumError(equationIn, std::string("index '") +
                                                   (isEllipsisLetter(ch) ? '.' : ch) +
                                                   "' repeats within one operand (a diagonal): "
                                                   "not supported");
            seen += ch;
            if (e.letters.find(ch) == std::string::npos)
                e.letters += ch;
        }
        e.inputs.push_back(term);
    }
    if (arrow == std::string::npos) {
        // Implicit output: the ellipsis dims, then the letters used once, in alphabetical order.
        std::string once;
        for (char ch : e.letters) {
            if (isEllipsisLetter(ch))
                continue;
            int uses = 0;
            for (const std::string &term : e.inputs)
                uses += int(std::count(term.begin(), term.end(), ch));
            if (uses == 1)
                once += ch;
        }
        std::sort(once.begin(), once.end());
        e.output = ellipsisLetters(maxEllipsis) + once;
    } else {
        std::string out = eq.substr(arrow + 2);
        const size_t dots = out.find("...");
        if (dots != std::string::npos)
            out.replace(dots, 3, ellipsisLetters(maxEllipsis));
        for (size_t i = 0; i < out.size(); ++i) {
            const char ch = out[i];
            if (e.letters.find(ch) == std::string::npos)
                return einsumError(equationIn,
                                   std::string("output index '") + ch + "' is in no operand");
            if (out.find(ch, i + 1) != std::string::npos)
                return einsumError(equationIn, std::string("output index '") + ch + "' repeats");
        }
        e.output = out;
    }
    return e;
}

/// Each letter's size from the operands' shapes: sizes must agree, or be 1 (broadcast).
inline Expected<std::map<char, int64_t>>
einsumSizes(const EinsumEquation &e, const std::vector<std::vector<int64_t>> &shapes)
{
    std::map<char, int64_t> size;
    for (size_t t = 0; t < e.inputs.size() && t < shapes.size(); ++t)
        for (size_t d = 0; d < e.inputs[t].size() && d < shapes[t].size(); ++d) {
            const char ch = e.inputs[t][d];
            const int64_t n = shapes[t][d];
            auto it = size.find(ch);
            if (it == size.end() || it->second == 1)
                size[ch] = n;
            else if (n != 1 && n != it->second)
                return makeError(StatusCode::InvalidArgument,
                                 std::string("Einsum: index '") + ch + "' has sizes " +
                                     std::to_string(it->second) + " and " + std::to_string(n));
        }
    return size;
}

/// The loop nest of one einsum-shaped computation: out[outer] = sum over inner of the product of
/// the factors. Letters the output holds at full size are outer; every other letter (contracted,
/// or broadcast in the output with size 1) is inner. Strides are in elements; 0 where a factor
/// lacks a letter or broadcasts it.
struct EinsumLoop
{
    std::vector<int64_t> outerSize, innerSize;
    std::vector<int64_t> outStride; ///< per outer letter
    /// Per factor: strides for the outer letters, then for the inner ones.
    std::vector<std::vector<int64_t>> factorOuter, factorInner;
    int64_t outerCount = 1, innerCount = 1;
};

inline std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape)
{
    std::vector<int64_t> s(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 1;)
        s[d - 1] = s[d] * shape[d];
    return s;
}

inline EinsumLoop
einsumLoop(const EinsumEquation &e, const std::map<char, int64_t> &size,
           const std::string &outLetters, const std::vector<int64_t> &outShape,
           const std::vector<std::pair<std::string, std::vector<int64_t>>> &factors)
{
    EinsumLoop l;
    std::string outer, inner;
    for (char ch : e.letters) {
        const size_t at = outLetters.find(ch);
        const int64_t n = size.at(ch);
        if (at != std::string::npos && at < outShape.size() && outShape[at] == n)
            outer += ch;
        else
            inner += ch;
    }
    const std::vector<int64_t> os = rowMajorStrides(outShape);
    auto strideIn = [&](const std::string &lettersOf, const std::vector<int64_t> &shape,
                        const std::vector<int64_t> &strides, char ch) -> int64_t {
        const size_t at = lettersOf.find(ch);
        if (at == std::string::npos || at >= shape.size() || shape[at] == 1)
            return 0;
        return strides[at];
    };
    for (char ch : outer) {
        l.outerSize.push_back(size.at(ch));
        l.outStride.push_back(strideIn(outLetters, outShape, os, ch));
        l.outerCount *= size.at(ch);
    }
    for (char ch : inner) {
        l.innerSize.push_back(size.at(ch));
        l.innerCount *= size.at(ch);
    }
    for (const auto &[letters, shape] : factors) {
        const std::vector<int64_t> fs = rowMajorStrides(shape);
        std::vector<int64_t> o, i;
        for (char ch : outer)
            o.push_back(strideIn(letters, shape, fs, ch));
        for (char ch : inner)
            i.push_back(strideIn(letters, shape, fs, ch));
        l.factorOuter.push_back(std::move(o));
        l.factorInner.push_back(std::move(i));
    }
    return l;
}

/// An equation resolved against its operands' shapes: what both backends' kernels start from.
struct ResolvedEinsum
{
    EinsumEquation eq;
    std::map<char, int64_t> size;
    std::vector<std::vector<int64_t>> shapes; ///< the operands'
};

inline Expected<ResolvedEinsum> resolveEinsum(const std::string &equation,
                                              std::vector<std::vector<int64_t>> shapes)
{
    std::vector<size_t> ranks;
    for (const auto &s : shapes)
        ranks.push_back(s.size());
    REMAT_ASSIGN_OR_RETURN(EinsumEquation e, parseEinsum(equation, ranks));
    REMAT_ASSIGN_OR_RETURN(auto size, einsumSizes(e, shapes));
    return ResolvedEinsum{std::move(e), std::move(size), std::move(shapes)};
}

/// The forward's loop: the factors are the operands, in order.
inline EinsumLoop einsumForwardLoop(const ResolvedEinsum &r, const std::vector<int64_t> &outShape)
{
    std::vector<std::pair<std::string, std::vector<int64_t>>> factors;
    for (size_t i = 0; i < r.shapes.size(); ++i)
        factors.emplace_back(r.eq.inputs[i], r.shapes[i]);
    return einsumLoop(r.eq, r.size, r.eq.output, outShape, factors);
}

/// Operand k's gradient loop (its output has operand k's shape): the factors are dY, then the
/// other operands in order.
inline EinsumLoop einsumGradLoop(const ResolvedEinsum &r, size_t k,
                                 const std::vector<int64_t> &dyShape)
{
    std::vector<std::pair<std::string, std::vector<int64_t>>> factors = {{r.eq.output, dyShape}};
    for (size_t m = 0; m < r.shapes.size(); ++m)
        if (m != k)
            factors.emplace_back(r.eq.inputs[m], r.shapes[m]);
    return einsumLoop(r.eq, r.size, r.eq.inputs[k], r.shapes[k], factors);
}

/// One pairwise product of torch.einsum (torch 1.13, aten/native/Linear.cpp), which is what
/// autograd keeps: every operand is permuted to [output letters..., the other letters in
/// alphabetical order]; the result starts as operand 0 and each later operand is combined with
/// it, left to right. A letter whose last operand this is gets contracted here (summed away at
/// once where one side has it at size 1). With something to contract the pair is one bmm of the
/// result as [lro, lo, sum] and the operand as [lro, sum, ro] (each a view where its strides
/// allow, else a copy), whose output is the new result [lro, lo, ro]; with nothing to contract it
/// is an element-wise mul. Letters are listed at size > 1 only (size-1 dims take no memory).
struct TorchEinsumStep
{
    size_t operand = 0;           ///< the right side: operand 1, 2, ...
    bool bmm = false;             ///< false: mul
    std::string lro, lo, sum, ro; ///< bmm's batch, left-only, contracted, right-only letters
    std::string result;           ///< the step's result (the next step's left side)
};

/// torch.einsum's steps for operands of these shapes (one per operand after the first).
inline std::vector<TorchEinsumStep>
torchEinsumSteps(const EinsumEquation &e, const std::vector<std::vector<int64_t>> &shapes)
{
    std::string canonical = e.output, others;
    for (char ch : e.letters)
        if (e.output.find(ch) == std::string::npos)
            others += ch;
    std::sort(others.begin(), others.end());
    canonical += others;
    auto letters = [&](size_t t) {
        std::string out;
        for (char ch : canonical) {
            const size_t at = e.inputs[t].find(ch);
            if (at != std::string::npos && at < shapes[t].size() && shapes[t][at] > 1)
                out += ch;
        }
        return out;
    };
    std::map<char, size_t> last;
    for (size_t t = 0; t < e.inputs.size(); ++t)
        for (char ch : e.inputs[t])
            if (e.output.find(ch) == std::string::npos)
                last[ch] = t;
    const auto has = [](const std::string &s, char ch) { return s.find(ch) != std::string::npos; };
    const auto drop = [](std::string &s, char ch) {
        s.erase(std::remove(s.begin(), s.end(), ch), s.end());
    };
    std::string result = letters(0);
    for (const auto &[ch, t] : last)
        if (t == 0)
            drop(result, ch); // summed before any product
    std::vector<TorchEinsumStep> steps;
    for (size_t i = 1; i < e.inputs.size() && i < shapes.size(); ++i) {
        TorchEinsumStep st;
        st.operand = i;
        std::string right = letters(i);
        for (char ch : canonical) {
            auto it = last.find(ch);
            if (it == last.end() || it->second != i)
                continue;
            const bool l = has(result, ch), r = has(right, ch);
            if (l && r)
                st.sum += ch;
            else if (r)
                drop(right, ch);
            else if (l)
                drop(result, ch);
        }
        st.bmm = !st.sum.empty();
        for (char ch : canonical) {
            if (has(st.sum, ch))
                continue;
            const bool l = has(result, ch), r = has(right, ch);
            if (l && r)
                st.lro += ch;
            else if (l)
                st.lo += ch;
            else if (r)
                st.ro += ch;
        }
        if (st.bmm) {
            st.result = st.lro + st.lo + st.ro;
        } else {
            for (char ch : canonical)
                if (has(result, ch) || has(right, ch))
                    st.result += ch;
        }
        result = st.result;
        steps.push_back(std::move(st));
    }
    return steps;
}

} // namespace remat::core::ops
