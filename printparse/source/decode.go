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
	k := 0
	for k < len(data) {
		r, n := utf8.DecodeRune(data[k:])
		if r == utf8.RuneError && n == 1 {
			break
		}
		k += n
	}
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
// file), into an *Error at the line it names: "file:line: invalid YAML:
// ...", on one line. A tab in the indentation, the usual cause (editors
// insert them), is named as such at its own line.
func YAMLError(file string, data []byte, err error) *Error {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = OneLine(strings.TrimPrefix(msg, "yaml: "))
	m := yamlLineRE.FindStringSubmatch(msg)
	if m == nil {
		return &Error{File: file, Msg: "invalid YAML: " + msg}
	}
	line, _ := strconv.Atoi(m[1])
	rest := strings.TrimPrefix(msg, m[0])
	if rest == "found character that cannot start any token" || rest == "found a tab character that violates indentation" {
		// yaml.v3 may name the line before the tab
		lines := strings.Split(string(data), "\n")
		for i := line - 1; i >= 0 && i < len(lines) && i <= line; i++ {
			if indent := lines[i][:len(lines[i])-len(strings.TrimLeft(lines[i], " \t"))]; strings.Contains(indent, "\t") {
				return &Error{File: file, Line: i + 1, Msg: "invalid YAML: expected spaces in the indentation, found a tab (YAML allows no tabs there)"}
			}
		}
	}
	return &Error{File: file, Line: line, Msg: "invalid YAML: " + rest}
}

var yamlLineRE = regexp.MustCompile(`^line (\d+): `)

// OneLine escapes the line breaks of s (\n, \r) so that a message
// stays on one line.
func OneLine(s string) string {
	return strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(s)
}
