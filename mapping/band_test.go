package mapping

import "testing"

func TestParseBand(t *testing.T) {
	tests := []struct {
		comment   string
		band, why string
		ok        bool
	}{
		{"sure: score 0.95 margin 0.56: name,class", BandSure, "", true},
		{"CHECK (printed sizes differ): score 0.95", BandCheck, "printed sizes differ", true},
		{"UNSURE (the template alone pairs them; low score 0.20): x", BandUnsure, "the template alone pairs them; low score 0.20", true},
		{"CHECK (N:1 grouped (experts), msprobe dumps no list): y", BandCheck, "N:1 grouped (experts), msprobe dumps no list", true},
		{"CHECK: no partner", BandCheck, "", true},
		{"check (reviewed by hand): ok", BandCheck, "reviewed by hand", true},
		{"check later: maybe wrong", "", "", false},
		{"sure", "", "", false},
		{"CHECK (unclosed: x", "", "", false},
		{"reviewed: CHECK (x): y", "", "", false},
		{"", "", "", false},
		{"surely: not a band", "", "", false},
	}
	for _, tc := range tests {
		band, why, ok := ParseBand(tc.comment)
		if band != tc.band || why != tc.why || ok != tc.ok {
			t.Errorf("ParseBand(%q) = %q, %q, %v; want %q, %q, %v", tc.comment, band, why, ok, tc.band, tc.why, tc.ok)
		}
	}
}

// What BandLabel writes, ParseBand reads back.
func TestBandRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		band   string
		doubts []string
	}{
		{BandSure, nil},
		{BandCheck, nil},
		{BandCheck, []string{"low score 0.40", "small margin 0.05 over the runner-up"}},
		{BandUnsure, []string{"dumped shapes differ (NPU [2 4], bench [4 2])"}},
	} {
		label := BandLabel(tc.band, tc.doubts)
		band, why, ok := ParseBand(label + ": score 0.50 margin 0.10: name")
		want := ""
		for i, d := range tc.doubts {
			if i > 0 {
				want += "; "
			}
			want += d
		}
		if !ok || band != tc.band || (tc.band != BandSure && why != want) {
			t.Errorf("%q read back as %q, %q, %v", label, band, why, ok)
		}
	}
}
