package mapping

import "strings"

// Confidence bands of a drafted line. layermap suggest starts the comment of
// every line it drafts with the band: "sure: ...", "CHECK (why): ..." or
// "UNSURE (why): ...".
const (
	// BandSure: the structures agree on the pair and nothing speaks against it.
	BandSure = "sure"
	// BandCheck: a plausible pair with a doubt; look before trusting its rows.
	BandCheck = "check"
	// BandUnsure: nothing but a prior or a name supports the pair, or the
	// evidence contradicts it.
	BandUnsure = "unsure"
)

// NoPartner starts the comment of a drafted line that pairs nothing on
// purpose ("no partner: ..."): its target does not exist on the bench side,
// so msprobe leaves the module unmatched, as it does any target it cannot
// find, instead of a class rule pairing it with a module that is not its
// partner (a dense layer's placeholder norm with the MoE layers' real
// one). Such a line has no band: it pairs nothing.
const NoPartner = "no partner"

// IsNoPartner reports whether comment starts a line that pairs nothing on
// purpose (see NoPartner).
func IsNoPartner(comment string) bool { return strings.HasPrefix(comment, NoPartner+":") }

// BandLabel is the band as a drafted comment starts with it: "sure", or
// "CHECK"/"UNSURE" followed by the doubts in parentheses.
func BandLabel(band string, doubts []string) string {
	if band == BandSure {
		return BandSure
	}
	s := strings.ToUpper(band)
	if len(doubts) > 0 {
		s += " (" + strings.Join(doubts, "; ") + ")"
	}
	return s
}

// ParseBand reads the band a comment starts with, as BandLabel writes it and
// a colon follows it ("CHECK (low score 0.40): score ..."), and the doubts in
// its parentheses. ok is false when the comment starts with no band (a line
// written by hand); the band word is read regardless of case.
func ParseBand(comment string) (band, why string, ok bool) {
	word := comment
	if i := strings.IndexAny(comment, " (:"); i >= 0 {
		word = comment[:i]
	}
	switch strings.ToLower(word) {
	case BandSure, BandCheck, BandUnsure:
		band = strings.ToLower(word)
	default:
		return "", "", false
	}
	rest := comment[len(word):]
	if strings.HasPrefix(rest, " (") {
		// the doubts may hold parentheses of their own: find the match
		depth, end := 0, -1
		for i := 1; i < len(rest) && end < 0; i++ {
			switch rest[i] {
			case '(':
				depth++
			case ')':
				if depth--; depth == 0 {
					end = i
				}
			}
		}
		if end < 0 {
			return "", "", false
		}
		why, rest = rest[2:end], rest[end+1:]
	}
	if !strings.HasPrefix(rest, ":") {
		return "", "", false
	}
	return band, why, true
}
