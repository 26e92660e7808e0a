package htmlview

import (
	"bufio"
	_ "embed"
	"html"
	"io"
	"strings"
)

var (
	//go:embed assets/page.html
	pageHTML string
	//go:embed assets/view.css
	viewCSS string
	//go:embed assets/view.js
	viewJS string
)

// Write writes the page: one HTML file with the data, script and styles
// inline.
func Write(w io.Writer, v *View) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	head, rest, _ := strings.Cut(pageHTML, "{{DATA}}")
	r := strings.NewReplacer("{{TITLE}}", html.EscapeString(v.Title), "{{CSS}}", viewCSS)
	if _, err := r.WriteString(bw, head); err != nil {
		return err
	}
	if err := writeJSON(bw, v); err != nil {
		return err
	}
	if _, err := strings.NewReplacer("{{JS}}", viewJS).WriteString(bw, rest); err != nil {
		return err
	}
	return bw.Flush()
}
