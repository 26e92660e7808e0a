// Package scan is the line scanner of print(model) text, split from the
// parser in printparse as go/scanner is from go/parser.
//
// It turns bytes into lines (UTF-16 and byte-order marks, CRLF and classic
// Mac line ends), finds where a dump starts among log noise (Header: the
// "Class(" root line, a prefix on the first or on every line, a launcher's
// rank tag, a timestamp that changes per line, mbridge's comments), reads
// the dump's body lines with the prefix and indentation removed (Scanner,
// counting blank and foreign lines), and splits one line into its tokens
// ("(key): [N x ]Class(body", Child). Building the module tree from those
// lines is printparse's.
package scan
