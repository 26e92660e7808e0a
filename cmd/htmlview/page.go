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
// inline, streamed out (the table a row at a time).
func Write(w io.Writer, v *View) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	head, rest, _ := strings.Cut(pageHTML, "{{DATA}}")
	r := strings.NewReplacer("{{TITLE}}", html.EscapeString(v.Title), "{{CSS}}", viewCSS)
	if _, err := r.WriteString(bw, head); err != nil {
		return err
	}
	e, err := writeData(bw, v)
	if err != nil {
		return err
	}
	mid, tail, _ := strings.Cut(rest, "{{TAB}}")
	if _, err := strings.NewReplacer("{{JS}}", viewJS).WriteString(bw, mid); err != nil {
		return err
	}
	if v.Table != nil {
		// after the script: the trees paint before the rows are read
		bw.WriteString(`<script id="tab" type="application/json">`)
		if err := e.writeTable(bw, v.Table); err != nil {
			return err
		}
		bw.WriteString("</script>\n")
	}
	if _, err := bw.WriteString(tail); err != nil {
		return err
	}
	return bw.Flush()
}
