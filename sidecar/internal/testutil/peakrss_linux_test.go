package testutil

import (
	"os/exec"
	"syscall"
	"testing"
)

// TestPeakRSSIsTheProgramsOwn: started straight from this process, a tiny
// program's max RSS reads as this process's own 64 MiB (the reason PeakRSS
// exists); started through PeakRSS, it reads as a few MiB.
func TestPeakRSSIsTheProgramsOwn(t *testing.T) {
	held := make([]byte, 64<<20)
	for i := range held {
		held[i] = 1
	}
	direct := exec.Command("/bin/true")
	if err := direct.Run(); err != nil {
		t.Fatal(err)
	}
	ru, ok := direct.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok || ru.Maxrss < 64<<10 {
		t.Logf("started directly, /bin/true reads %d KiB: this kernel does not count the parent in", ru.Maxrss)
	}
	out, kib, err := NewPeakRSS(t).Run(exec.Command("/bin/true"))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if kib <= 0 || kib >= 16<<10 {
		t.Errorf("through PeakRSS, /bin/true peaks at %d KiB, want a few MiB", kib)
	}
	if held[len(held)-1] != 1 {
		t.Fatal("unreachable: keeps the 64 MiB alive until here")
	}
}
