//go:build windows

package state

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Windows privacy is an owner-only, protected DACL rather than a mode: the
// mode Go reports there says nothing about who can open a file. See
// docs/state.md for what is enforced.

func currentUser() (*windows.SID, error) {
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return nil, fmt.Errorf("read the current user's SID: %w", err)
	}
	return u.User.Sid, nil
}

// privateSA is a security descriptor owned by the current user whose
// protected DACL grants full access to that user only; inherit makes
// directories pass the same single entry to what is created inside them.
func privateSA(inherit bool) (*windows.SecurityAttributes, error) {
	sid, err := currentUser()
	if err != nil {
		return nil, err
	}
	flags := ""
	if inherit {
		flags = "OICI"
	}
	s := sid.String()
	sd, err := windows.SecurityDescriptorFromString("O:" + s + "D:P(A;" + flags + ";FA;;;" + s + ")")
	if err != nil {
		return nil, fmt.Errorf("build an owner-only security descriptor: %w", err)
	}
	return &windows.SecurityAttributes{
		Length:             uint32(unsafe.Sizeof(windows.SecurityAttributes{})),
		SecurityDescriptor: sd,
	}, nil
}

func mkdirPrivate(p string) error {
	if err := checkLocal(p); err != nil {
		return err
	}
	sa, err := privateSA(true)
	if err != nil {
		return err
	}
	p16, err := windows.UTF16PtrFromString(p)
	if err != nil {
		return &os.PathError{Op: "mkdir", Path: p, Err: err}
	}
	if err := windows.CreateDirectory(p16, sa); err != nil {
		return &os.PathError{Op: "mkdir", Path: p, Err: err}
	}
	return nil
}

func createPrivate(p string) (*os.File, error) {
	sa, err := privateSA(false)
	if err != nil {
		return nil, err
	}
	p16, err := windows.UTF16PtrFromString(p)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	h, err := windows.CreateFile(p16, windows.GENERIC_READ|windows.GENERIC_WRITE,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE,
		sa, windows.CREATE_NEW, windows.FILE_ATTRIBUTE_NORMAL|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	return os.NewFile(uintptr(h), p), nil
}

func checkDir(p string, fi fs.FileInfo) error {
	if err := checkCommon(p, fi); err != nil {
		return err
	}
	if !fi.IsDir() {
		return unsafeKind(p, "is not a directory")
	}
	return checkACL(p)
}

func checkFile(p string, fi fs.FileInfo) error {
	if err := checkCommon(p, fi); err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return unsafeKind(p, "is not a regular file")
	}
	return checkACL(p)
}

func checkCommon(p string, fi fs.FileInfo) error {
	if fi.Mode()&(fs.ModeSymlink|fs.ModeIrregular|fs.ModeDevice|fs.ModeNamedPipe) != 0 {
		return unsafeKind(p, "is a symlink, junction or other reparse point, which could redirect kmx's private state")
	}
	if d, ok := fi.Sys().(*windows.Win32FileAttributeData); ok && d.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0 {
		return unsafeKind(p, "is a reparse point, which could redirect kmx's private state")
	}
	if strings.Contains(filepath.Base(p), ":") {
		return unsafeKind(p, "names an alternate data stream")
	}
	return checkLocal(p)
}

// checkLocal refuses state that is not on a fixed, local NTFS volume reached
// by its own drive letter: UNC and device paths, network and removable
// drives, SUBST drives and other file systems.
func checkLocal(p string) error {
	vol := filepath.VolumeName(p)
	if len(vol) != 2 || vol[1] != ':' {
		return &UnsafeError{Path: p, Problem: "is a network, UNC or device path", Fix: "set KMX_HOME to a folder on a local NTFS drive"}
	}
	root16, err := windows.UTF16PtrFromString(vol + `\`)
	if err != nil {
		return fmt.Errorf("check state path %s: %w", p, err)
	}
	if t := windows.GetDriveType(root16); t != windows.DRIVE_FIXED {
		return &UnsafeError{Path: p, Problem: fmt.Sprintf("is not on a fixed local disk (drive type %d)", t), Fix: "set KMX_HOME to a folder on a local NTFS drive"}
	}
	vol16, err := windows.UTF16PtrFromString(vol)
	if err != nil {
		return fmt.Errorf("check state path %s: %w", p, err)
	}
	target := make([]uint16, windows.MAX_PATH)
	if n, err := windows.QueryDosDevice(vol16, &target[0], uint32(len(target))); err == nil && n > 0 {
		if strings.HasPrefix(windows.UTF16ToString(target), `\??\`) {
			return &UnsafeError{Path: p, Problem: "is on a SUBST (remapped) drive", Fix: "set KMX_HOME to the real folder on a local NTFS drive"}
		}
	}
	fsName := make([]uint16, windows.MAX_PATH)
	if err := windows.GetVolumeInformation(root16, nil, 0, nil, nil, nil, &fsName[0], uint32(len(fsName))); err != nil {
		return fmt.Errorf("check the file system of %s: %w", p, err)
	}
	if name := windows.UTF16ToString(fsName); name != "NTFS" {
		return &UnsafeError{Path: p, Problem: fmt.Sprintf("is on a %s volume, without persistent ACLs", name), Fix: "set KMX_HOME to a folder on a local NTFS drive"}
	}
	return nil
}

// checkACL requires the current user as owner and a protected DACL whose
// allow entries all name the current user.
func checkACL(p string) error {
	user, err := currentUser()
	if err != nil {
		return err
	}
	sd, err := windows.GetNamedSecurityInfo(p, windows.SE_FILE_OBJECT,
		windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return fmt.Errorf("read the permissions of %s: %w", p, err)
	}
	fix := fmt.Sprintf(`run icacls "%s" /inheritance:r /grant:r "%%USERNAME%%:(OI)(CI)F", or set KMX_HOME to a private folder`, p)
	owner, _, err := sd.Owner()
	if err != nil {
		return fmt.Errorf("read the owner of %s: %w", p, err)
	}
	if !owner.Equals(user) {
		return &UnsafeError{Path: p, Problem: fmt.Sprintf("is owned by %s, not by you", owner.String()), Fix: "set KMX_HOME to a folder you own"}
	}
	control, _, err := sd.Control()
	if err != nil {
		return fmt.Errorf("read the permissions of %s: %w", p, err)
	}
	if control&windows.SE_DACL_PROTECTED == 0 {
		return &UnsafeError{Path: p, Problem: "inherits permissions from its parent folder", Fix: fix}
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return fmt.Errorf("read the permissions of %s: %w", p, err)
	}
	if dacl == nil {
		return &UnsafeError{Path: p, Problem: "has no access list, so everyone can open it", Fix: fix}
	}
	for i := uint32(0); i < uint32(dacl.AceCount); i++ {
		var ace *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(dacl, i, &ace); err != nil {
			return fmt.Errorf("read the permissions of %s: %w", p, err)
		}
		switch ace.Header.AceType {
		case windows.ACCESS_DENIED_ACE_TYPE:
			// Denying access never widens it.
		case windows.ACCESS_ALLOWED_ACE_TYPE:
			sid := (*windows.SID)(unsafe.Pointer(&ace.SidStart))
			if !sid.Equals(user) {
				return &UnsafeError{Path: p, Problem: fmt.Sprintf("grants access to %s, not only to you", sid.String()), Fix: fix}
			}
		default:
			return &UnsafeError{Path: p, Problem: fmt.Sprintf("has an access entry of type %d that kmx cannot judge", ace.Header.AceType), Fix: fix}
		}
	}
	return nil
}

// A reader on windows needs what a writer needs: the owner-only DACL says
// who may open the path; a read-only attribute is not kmx's to judge.
func checkDirReadable(p string, fi fs.FileInfo) error { return checkDir(p, fi) }

func checkFileReadable(p string, fi fs.FileInfo) error { return checkFile(p, fi) }
