//go:build !unix

package compare

import "errors"

func mkfifo(string) error { return errors.New("not supported") }
