package compare

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"sync"
	"unsafe"

	"gopkg.in/yaml.v3"
)

// A data mapping yaml (-dm) is one flat mapping, a pair a row: 9 MB for
// dumps of 27 MB a side. dataMappingChunks cuts the file, as it reads
// it, at lines that start a key of the top-level mapping and reads the
// pieces on every CPU, each as a document of its own, so that only the
// pieces being read are held of the file. A piece of plain pairs, as
// msprobe writes them, is read without a YAML parser (plainPairs); any
// other by yaml.v3, which reads at about 25 MB/s and holds two nodes a
// pair until it is done (some 100 bytes a pair besides the strings). A
// cut could change what the file means where the piece before it ends
// inside a construct (a quoted scalar, a flow collection: yaml.v3 then
// refuses that piece), where the document ends before the file does (a
// document marker or a directive: such a file is never cut), or where
// the top-level mapping is a flow mapping (yaml.v3 reads it without what
// follows). Any piece yaml.v3 refuses, or that is not a block mapping of
// scalars at column 1, sends the whole file to the reading as one
// document, whose errors name their line. FuzzDataMappingChunks holds
// the two readings to the same pairs.

// dmChunk is the least size of a piece: small, since a piece yaml.v3
// reads takes some ten times its size in nodes, and large enough that
// starting on each piece costs nothing much.
const dmChunk = 1 << 18

// dataMappingChunks reads the data mapping in r in pieces of at least
// chunk bytes on up to workers goroutines; false: read it whole (too
// small to cut, or a piece that must not be read alone; err is r's). The
// file is read as the pieces are, and their pairs added in file order as
// they come: at most workers+1 pieces are held at a time, read or
// waiting, so the memory the reading takes beyond the DataMapping does
// not grow with the file.
func dataMappingChunks(r io.Reader, workers, chunk int) (_ *DataMapping, _ bool, err error) {
	workers = max(workers, 1)
	type piece struct {
		b     []byte // its pairs' bytes
		pairs [][2]string
		ok    bool
		done  chan struct{}
	}
	slots := make(chan struct{}, workers+1) // pieces read and not yet added
	order := make(chan *piece, cap(slots))  // in file order, to add
	work := make(chan *piece, cap(slots))
	quit := make(chan struct{})
	// The bytes and pair lists of pieces added are filled again, so that
	// the reading touches the memory of the pieces held at a time, not
	// of the file (fresh pages cost more than the reading).
	spareBytes := make(chan []byte, cap(slots)+1)
	spareLists := make(chan [][2]string, cap(slots)+1)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for p := range work {
				p.pairs, p.ok = dataMappingPiece(p.b, takeSpare(spareLists))
				close(p.done)
			}
		})
	}
	var cut bool // false: fewer than two pieces, or a piece not to be read alone
	wg.Go(func() {
		defer close(work)
		defer close(order)
		cut, err = cutPieces(r, chunk, func() []byte { return takeSpare(spareBytes) }, func(b []byte) bool {
			select {
			case slots <- struct{}{}:
			case <-quit:
				return false
			}
			p := &piece{b: b, done: make(chan struct{})}
			work <- p
			order <- p
			return true
		})
	})
	d := newDataMapping()
	ok := true
	for p := range order {
		<-p.done
		if ok = ok && p.ok; !ok {
			close(quit)
			break
		}
		for _, kv := range p.pairs {
			d.add(kv[0], kv[1]) // copies what it keeps
		}
		putSpare(spareBytes, p.b[:0])
		putSpare(spareLists, p.pairs[:0])
		<-slots
	}
	for range order { // after a refused piece
	}
	wg.Wait()
	if !ok || !cut || err != nil {
		d.drop() // before the whole file is read
		return nil, false, err
	}
	d.done()
	return d, true, nil
}

// takeSpare takes a spare from c, nil when it has none.
func takeSpare[T any](c chan []T) []T {
	select {
	case s := <-c:
		return s
	default:
		return nil
	}
}

// putSpare gives s to c, unless c is full.
func putSpare[T any](c chan []T, s []T) {
	select {
	case c <- s:
	default:
	}
}

// cutPieces reads r and gives each piece to take as it is read (take
// false: stop): from r's start, then from each first line at least chunk
// bytes past the last cut that starts with a letter, digit or underscore
// (a plain key at column 1). false: fewer than two pieces, a piece with a
// document marker or a directive (such a file is never cut), or take
// stopped. A piece after the first is read into spare's buffer when it
// is large enough (spare may be nil, or return nil).
func cutPieces(r io.Reader, chunk int, spare func() []byte, take func([]byte) bool) (bool, error) {
	chunk = max(chunk, 1)
	buf := make([]byte, 0, 2*chunk)
	from, n := chunk, 0 // where the next cut is looked for; pieces taken
	for eof := false; ; {
		at, found := 0, false
		if from <= len(buf) {
			at, found, from = nextKeyLine(buf, from)
		}
		if !found && !eof {
			if len(buf) == cap(buf) {
				buf = slices.Grow(buf, cap(buf))
			}
			k, err := r.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+k]
			if errors.Is(err, io.EOF) {
				eof = true
			} else if err != nil {
				return false, err
			}
			continue
		}
		if !found {
			at = len(buf) // the last piece
		}
		if n == 0 && at == len(buf) || hasDocumentMarks(buf[:at]) {
			return false, nil
		}
		var rest []byte
		if found {
			need := max(2*chunk, len(buf)-at)
			if spare != nil {
				rest = spare()
			}
			if cap(rest) < need {
				rest = make([]byte, 0, need)
			}
			rest = append(rest[:0], buf[at:]...)
		}
		if !take(buf[:at]) {
			return false, nil
		}
		if n++; !found {
			return true, nil
		}
		buf, from = rest, chunk
	}
}

// nextKeyLine finds in b the first line start at or after from (at least
// 1) that starts with a letter, digit or underscore; where b ends before
// that is known, resume is where to look from once b holds more.
func nextKeyLine(b []byte, from int) (at int, found bool, resume int) {
	for at = from; at <= len(b); at++ {
		nl := bytes.IndexByte(b[at-1:], '\n')
		if nl < 0 {
			return 0, false, len(b)
		}
		if at += nl; at == len(b) {
			return 0, false, at // its first byte is not read yet
		}
		if plainKeyStart(b[at]) {
			return at, true, at
		}
	}
	return 0, false, len(b)
}

// dataMappingPiece reads one piece of a data mapping: its pairs, false
// where it is not a block mapping of scalars at column 1. A piece of
// plain pairs only (plainPairs), as msprobe writes row names, needs no
// YAML parser; yaml.v3 reads any other.
func dataMappingPiece(b []byte, ps [][2]string) ([][2]string, bool) {
	if ps, ok := plainPairs(b, ps); ok {
		return ps, true
	}
	return yamlPiece(b)
}

// yamlPiece is dataMappingPiece by yaml.v3.
func yamlPiece(b []byte) ([][2]string, bool) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil || len(doc.Content) != 1 {
		return nil, false
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode || top.Style&yaml.FlowStyle != 0 || top.Column != 1 {
		return nil, false
	}
	ps := make([][2]string, 0, len(top.Content)/2)
	if bad := scalarPairs(top, func(k, v string) { ps = append(ps, [2]string{k, v}) }); bad >= 0 {
		return nil, false
	}
	return ps, true
}

// plainPairs reads b when each of its lines is a pair of plain names
// in one of the two forms yaml.dump writes them (see pairText), "key:
// value", or "? key" then ": value" for a long key, each line ended by a
// newline but the last; false: any other line, for yaml.v3 to read. A
// plain name here (plainName) is a string whose text is its YAML value
// as yaml.v3 reads it: a letter, digit or underscore (no indicator) then
// letters, digits and . _ - / (no ": " or " #" to end it, no space to
// fold or trim); it ends its line, and the next line starts at column 1
// with no space, so it goes on no further. A simple key is at most
// simpleKeyLimit bytes. FuzzPlainPairs holds it to yaml.v3's reading. The
// names are b's bytes, not copied: b must not change while they are
// used. The pairs are appended to ps[:0].
func plainPairs(b []byte, ps [][2]string) ([][2]string, bool) {
	if len(b) == 0 {
		return nil, false // no document: yaml.v3 reads no mapping
	}
	ps = slices.Grow(ps[:0], len(b)/64)
	for len(b) > 0 {
		explicit := b[0] == '?'
		if explicit {
			if len(b) < 2 || b[1] != ' ' {
				return nil, false
			}
			b = b[2:]
		}
		k := plainName(b)
		if k == 0 || !explicit && k > simpleKeyLimit {
			return nil, false
		}
		key := b[:k]
		sep := ": "
		if explicit {
			sep = "\n: "
		}
		if !bytes.HasPrefix(b[k:], []byte(sep)) {
			return nil, false
		}
		b = b[k+len(sep):]
		v := plainName(b)
		if v == 0 || v < len(b) && b[v] != '\n' {
			return nil, false
		}
		ps = append(ps, [2]string{unsafe.String(&key[0], len(key)), unsafe.String(&b[0], v)})
		b = b[min(v+1, len(b)):]
	}
	return ps, true
}

// simpleKeyLimit is the longest simple key ("key: value") yaml.v3 reads:
// it looks for the ":" no further than 1024 characters past the key's
// start.
const simpleKeyLimit = 1024

// plainName is the length of the plain name b starts with (see
// plainPairs), 0 for none.
func plainName(b []byte) int {
	if len(b) == 0 || !plainKeyStart(b[0]) {
		return 0
	}
	n := 1
	for n < len(b) && plainByte[b[n]] {
		n++
	}
	return n
}

// scalarPairs gives add the pairs of the mapping node top in order, up to
// the first that is not two scalars, and returns that one's key's index
// in top.Content (-1: none).
func scalarPairs(top *yaml.Node, add func(npu, bench string)) int {
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		if k.Kind != yaml.ScalarNode || v.Kind != yaml.ScalarNode {
			return i
		}
		add(k.Value, v.Value)
	}
	return -1
}

func plainKeyStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// hasDocumentMarks tells whether a line of b starts with a document
// marker ("---", "...") or a directive ("%").
func hasDocumentMarks(b []byte) bool {
	for line := b; len(line) > 0; {
		if line[0] == '%' || bytes.HasPrefix(line, []byte("---")) || bytes.HasPrefix(line, []byte("...")) {
			return true
		}
		nl := bytes.IndexByte(line, '\n')
		if nl < 0 {
			return false
		}
		line = line[nl+1:]
	}
	return false
}
