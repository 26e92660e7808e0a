package source

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Line returns the 1-based line of data that holds byte off (an offset
// past the end counts all of data).
func Line(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return 1 + bytes.Count(data[:off], []byte{'\n'})
}

// LineAt is Line for a file too large to hold: it counts the lines of r
// up to byte off.
func LineAt(r io.ReaderAt, off int64) (int, error) {
	buf := make([]byte, min(off, 1<<20))
	line := 1
	for pos := int64(0); pos < off; {
		n, err := r.ReadAt(buf[:min(int64(len(buf)), off-pos)], pos)
		line += bytes.Count(buf[:n], []byte{'\n'})
		pos += int64(n)
		if err != nil && err != io.EOF {
			return 0, err
		}
		if n == 0 {
			break
		}
	}
	return line, nil
}

// CheckUTF8 returns an *Error at the first byte of data, the JSON text of
// file, that is not UTF-8, or nil when all of it is: encoding/json would
// read such a byte as U+FFFD where Python's json.load refuses the file.
func CheckUTF8(file string, data []byte) error {
	if utf8.Valid(data) {
		return nil
	}
	k := badUTF8(data)
	return &Error{File: file, Line: Line(data, int64(k)), Expected: "UTF-8 text",
		Found: fmt.Sprintf("byte 0x%02x, which is not UTF-8 (Python's json.load refuses the file)", data[k])}
}

// JSONError turns err, what encoding/json returned decoding data (the
// text of file), into an *Error at the line it names: "file:line: expected
// <expected>, found invalid JSON (...)" for a syntax error, "found a JSON
// <type>" for a value of another type, "found an empty file" for no value.
// Any other error becomes the cause of an *Error at file.
func JSONError(file string, data []byte, expected string, err error) *Error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case len(bytes.TrimLeft(data, " \t\r\n")) == 0 && (errors.Is(err, io.EOF) || errors.As(err, &se)):
		return &Error{File: file, Line: 1, Expected: expected, Found: "an empty file"}
	case errors.Is(err, io.ErrUnexpectedEOF): // a json.Decoder at a truncated value
		return &Error{File: file, Line: Line(data, int64(len(data))), Expected: expected, Found: "invalid JSON (unexpected end of JSON input)"}
	case errors.As(err, &se):
		return &Error{File: file, Line: Line(data, se.Offset), Expected: expected, Found: "invalid JSON (" + se.Error() + ")"}
	case errors.As(err, &te):
		return &Error{File: file, Line: Line(data, te.Offset), Expected: expected, Found: "a JSON " + te.Value}
	}
	return &Error{File: file, Msg: "expected " + expected, Err: err}
}

// YAMLError turns err, what yaml.v3 returned decoding data (the text of
// file), into an *Error at the line a reader would point at: "file:line:
// invalid YAML: ...", on one line. yaml.v3 counts the lines of its syntax
// errors from 0 and names the line of the enclosing construct when that is
// not the first line; YAMLError re-reads data to find the line instead
// (see syntaxLine). A tab in the indentation, the usual cause (editors
// insert them), is named as such at its own line.
func YAMLError(file string, data []byte, err error) *Error {
	return yamlError(file, data, err, relocateLimit)
}

// yamlError is YAMLError re-reading data to place an error only when it
// holds at most limit bytes.
func yamlError(file string, data []byte, err error, limit int) *Error {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		// decoding errors (types, repeated keys) name 1-based node lines
		line, rest := yamlLine(OneLine(te.Errors[0]))
		return &Error{File: file, Line: line, Msg: "invalid YAML: " + rest}
	}
	line, rest := yamlLine(OneLine(strings.TrimPrefix(err.Error(), "yaml: ")))
	if line = syntaxLine(data, rest, line, limit); line == 0 {
		line = readerLine(data, rest)
	}
	if line == 0 {
		return &Error{File: file, Msg: "invalid YAML: " + rest}
	}
	if rest == "found character that cannot start any token" || rest == "found a tab character that violates indentation" {
		lines := strings.Split(string(data), "\n")
		for i := line - 1; i >= 0 && i < len(lines) && i <= line; i++ {
			if indent := lines[i][:len(lines[i])-len(strings.TrimLeft(lines[i], " \t"))]; strings.Contains(indent, "\t") {
				return &Error{File: file, Line: i + 1, Msg: "invalid YAML: expected spaces in the indentation, found a tab (YAML allows no tabs there)"}
			}
		}
	}
	msg := "invalid YAML: " + rest
	if hint := yamlHints[rest]; hint != "" {
		msg += " (" + hint + ")"
	}
	return &Error{File: file, Line: line, Msg: msg}
}

// yamlLine splits yaml.v3's "line N: problem" into N and the problem
// (0 when the message names no line).
func yamlLine(msg string) (int, string) {
	m := yamlLineRE.FindStringSubmatch(msg)
	if m == nil {
		return 0, msg
	}
	line, _ := strconv.Atoi(m[1])
	return line, msg[len(m[0]):]
}

var yamlLineRE = regexp.MustCompile(`^line (\d+): `)

// parserProblems are the problems yaml.v3's parser (as opposed to its
// scanner) reports; the value tells whether the line to show is the
// offending token's (true) or the construct's left open (false: an
// unclosed '[' or '{' is where the reader must look, not the key after it).
var parserProblems = map[string]bool{
	"did not find expected key":              true,
	"did not find expected '-' indicator":    true,
	"did not find expected node content":     true,
	"did not find expected <document start>": true,
	"did not find expected <stream-start>":   true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
	"did not find expected ',' or ']'":       false,
	"did not find expected ',' or '}'":       false,
}

// yamlHints say in words what the terser problems mean.
var yamlHints = map[string]string{
	"did not find expected ',' or ']'": "a '[' here is not closed, or a ',' is missing between its items",
	"did not find expected ',' or '}'": "a '{' here is not closed, or a ',' is missing between its entries",
	"found unexpected end of stream":   "a quote opened here is not closed",
}

// relocateLimit bounds the text YAMLError re-reads to place an error
// (reading a large text again costs as much as the first time); larger
// texts keep yaml.v3's line, counted from 1.
const relocateLimit = MaxMappingYAML

// syntaxLine returns the 1-based line of data at which yaml.v3 met
// problem, given reported, the line its message named (0: none); 0 when
// no line can be told (encoding errors); reported for problems that are
// not syntax errors (reading data again does not meet them).
//
// yaml.v3 names the line of the problem's context (the '[' left open, the
// quote, the enclosing mapping), or the problem's own line when the
// context is on the first line, counted from 0 for parser errors and from
// 1 for scanner errors. Reading data again after one more leading newline
// moves every context off the first line, so the message names the
// context's line, exactly; reading it again from the start of that line
// puts the context on the first line, so the message names the problem's.
// Data above limit bytes is not read again: the line is yaml.v3's, counted
// from 1.
func syntaxLine(data []byte, problem string, reported, limit int) int {
	wantProblem, parser := parserProblems[problem]
	if len(data) > limit {
		if parser {
			return clampLine(data, reported+1)
		}
		return clampLine(data, reported)
	}
	shifted := append(append(make([]byte, 0, len(data)+1), '\n'), data...)
	line, ok := reparse(shifted, problem)
	switch {
	case !ok:
		return reported
	case line == 0:
		return 0 // a reader error (encoding), which has no position
	case !parser:
		line-- // the context's line (parser: 0-based in shifted, 1-based in data)
	}
	if wantProblem {
		start := lineStart(data, line)
		if l, ok := reparse(data[start:], problem); ok {
			line += l // 0-based: the context is on the first line
		}
	}
	return clampLine(data, line)
}

// reparse decodes every document of data with yaml.v3 and reports the
// line its error names when that error is problem.
func reparse(data []byte, problem string) (int, bool) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if err == nil {
			continue
		}
		var te *yaml.TypeError
		if errors.Is(err, io.EOF) || errors.As(err, &te) {
			return 0, false
		}
		l, rest := yamlLine(OneLine(strings.TrimPrefix(err.Error(), "yaml: ")))
		return l, rest == problem
	}
}

// readerLine returns the line of the first byte of data that yaml.v3's
// reader refuses with problem, whose message names no line, or 0.
func readerLine(data []byte, problem string) int {
	bad := -1
	switch {
	case strings.Contains(problem, "UTF-8"):
		bad = badUTF8(data)
	case problem == "control characters are not allowed":
		bad = bytes.IndexFunc(data, func(r rune) bool {
			return r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f
		})
	}
	if bad < 0 {
		return 0
	}
	return Line(data, int64(bad))
}

// badUTF8 returns the offset of the first byte of data that is not UTF-8,
// or -1.
func badUTF8(data []byte) int {
	for k := 0; k < len(data); {
		r, n := utf8.DecodeRune(data[k:])
		if r == utf8.RuneError && n == 1 {
			return k
		}
		k += n
	}
	return -1
}

// lineStart returns the offset of the 1-based line of data.
func lineStart(data []byte, line int) int {
	off := 0
	for ; line > 1; line-- {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			return len(data)
		}
		off += i + 1
	}
	return off
}

// clampLine keeps line within data's lines that hold text: a problem at
// the end of the input (a quote or bracket never closed) is shown at the
// last line, not at the empty one after the final newline.
func clampLine(data []byte, line int) int {
	if line == 0 {
		return 0
	}
	last := Line(data, int64(len(bytes.TrimRight(data, " \t\r\n"))))
	return max(1, min(line, last))
}

// OneLine escapes the line breaks of s (\n, \r) so that a message
// stays on one line.
func OneLine(s string) string {
	return strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(s)
}
