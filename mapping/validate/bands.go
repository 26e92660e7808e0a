package validate

import (
	"fmt"

	"github.com/layermap/layermap/mapping"
)

// Bands counts the rules of a mapping by the confidence band their comment
// starts with (see mapping.ParseBand).
type Bands struct {
	Sure, Check, Unsure int
}

// Total is the number of rules with a band.
func (b Bands) Total() int { return b.Sure + b.Check + b.Unsure }

// bands reads the band of every rule's comment: a finding per CHECK line
// (info) and per UNSURE line (warning), so the doubts suggest wrote beside a
// line stay in view when the file is checked later.
func bands(m *mapping.Mapping) (Bands, []Finding) {
	var n Bands
	var out []Finding
	for _, r := range m.Rules() {
		band, why, ok := mapping.ParseBand(r.Comment)
		if !ok {
			continue
		}
		f := Finding{Check: CheckBand, Pos: r.KeyPos}
		switch band {
		case mapping.BandSure:
			n.Sure++
			continue
		case mapping.BandCheck:
			n.Check++
			f.Code, f.Severity = CodeBandCheck, mapping.Info
			f.Msg = fmt.Sprintf("%s drafted as CHECK%s: look at its rows before trusting them", r, paren(why))
		default:
			n.Unsure++
			f.Code, f.Severity = CodeBandUnsure, mapping.Warning
			f.Msg = fmt.Sprintf("%s drafted as UNSURE%s: nothing but a prior or a name supports it; once reviewed, edit the word", r, paren(why))
		}
		out = append(out, f)
	}
	return n, out
}

func paren(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}
