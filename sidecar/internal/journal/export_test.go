package journal

// HoldCommitLock takes j's writer lock, as a commit in progress holds it,
// until release is called: a read-back made meanwhile reads on the reader.
func HoldCommitLock(j *Journal) (release func()) {
	j.mu.Lock()
	return j.mu.Unlock
}

// ReaderOpen reports whether j's reader connection is open.
func ReaderOpen(j *Journal) bool {
	j.rmu.Lock()
	defer j.rmu.Unlock()
	return j.r != nil
}
