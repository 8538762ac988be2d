package vscodetools

// The table of VS Code's built-in tool references.
//
// Source: the tool contributions of VS Code 1.111 and of the GitHub Copilot
// Chat extension 0.42.0 (engines.vscode ^1.111.0), which together define the
// built-in tools an agent file can reference: the `languageModelTools` and
// `languageModelToolSets` contributions of the extension's package.json
// (each tool's id, toolReferenceName, legacyToolReferenceFullNames and
// inputSchema; each set's members), and the tools VS Code registers itself
// (src/vs/workbench/contrib/chat and terminalContrib/chatAgentTools: the
// terminal, task, test, usages and rename tools, the `execute`, `read`,
// `agent` and `vscode` sets). The descriptions are kmx's own short wording
// of what each tool does; the input schemas keep VS Code's parameter names,
// types and required lists. A tool's full reference name is
// `set/toolReferenceName` when a set holds it and its toolReferenceName
// otherwise; the legacy names are the ones VS Code still resolves for older
// files (`editFiles`, `codebase`, `runCommands/runInTerminal`, ...).
//
// TableVersion names this table in every journal that offers one of its
// tools: change it whenever a name, description or schema changes.
const (
	TableVersion = "kmx-vscode-tools-v1"
	// VSCodeVersion is the VS Code release the table was read from.
	VSCodeVersion = "1.111"
	// CopilotChatVersion is the Copilot Chat release the table was read from.
	CopilotChatVersion = "0.42.0"
)

// Tool is one built-in tool as VS Code defines it.
type Tool struct {
	// Name is the full reference name an agent file writes today
	// (`edit/editFiles`, `findTestFiles`).
	Name string
	// ID is the name VS Code registers the tool under: the `name` of its
	// vscode.lm.tools entry (`copilot_searchCodebase`, `run_in_terminal`).
	// IDs lists further entries that implement the same reference, in the
	// order VS Code prefers them (edit/editFiles is a reference that turns
	// on VS Code's file-editing tools).
	ID  string
	IDs []string
	// Description is what the model is told the tool does.
	Description string
	// Schema is the tool's input JSON schema (an object schema).
	Schema string
}

// Set is one tool set: a name that stands for its members.
type Set struct {
	Name    string
	Members []string
}

// empty is the schema of a tool that takes no input.
const empty = `{"type":"object","properties":{}}`

// tools is the table, in set order. It is read-only.
var tools = []Tool{
	// edit
	{Name: "edit/createDirectory", ID: "copilot_createDirectory",
		Description: "Create a new directory structure in the workspace, like mkdir -p.",
		Schema:      `{"type":"object","properties":{"dirPath":{"type":"string","description":"The absolute path to the directory to create."}},"required":["dirPath"]}`},
	{Name: "edit/createFile", ID: "copilot_createFile",
		Description: "Create a new file in the workspace with the given content. The directory is created if needed; an existing file is not overwritten.",
		Schema:      `{"type":"object","properties":{"filePath":{"type":"string","description":"The absolute path to the file to create."},"content":{"type":"string","description":"The content to write to the file."}},"required":["filePath","content"]}`},
	{Name: "edit/createJupyterNotebook", ID: "copilot_createNewJupyterNotebook",
		Description: "Generate a new Jupyter notebook from a description of what it should contain.",
		Schema:      `{"type":"object","properties":{"query":{"type":"string","description":"The description of the notebook to create."}},"required":["query"]}`},
	{Name: "edit/editFiles", ID: "copilot_replaceString", IDs: []string{"copilot_insertEdit", "copilot_applyPatch"},
		Description: "Edit an existing file in the workspace: replace one exact occurrence of a string with another. Include enough surrounding lines in oldString to make it unique.",
		Schema:      `{"type":"object","properties":{"filePath":{"type":"string","description":"The absolute path to the file to edit."},"oldString":{"type":"string","description":"The exact text to replace."},"newString":{"type":"string","description":"The text to replace it with."}},"required":["filePath","oldString","newString"]}`},
	{Name: "edit/editNotebook", ID: "copilot_editNotebook",
		Description: "Edit a cell of a Jupyter notebook in the workspace: insert, edit or delete it.",
		Schema:      `{"type":"object","properties":{"filePath":{"type":"string","description":"The absolute path to the notebook."},"cellId":{"type":"string","description":"The cell to edit, or after which to insert."},"newCode":{"type":"string","description":"The cell's new source."},"language":{"type":"string","description":"The language of the cell."},"editType":{"type":"string","enum":["insert","delete","edit"],"description":"What to do with the cell."}},"required":["filePath","editType","cellId"]}`},
	{Name: "edit/rename", ID: "vscode_renameSymbol",
		Description: "Rename a code symbol and update every reference to it across the workspace, using the language's rename support.",
		Schema:      `{"type":"object","properties":{"symbol":{"type":"string","description":"The current name of the symbol."},"newName":{"type":"string","description":"The new name."},"filePath":{"type":"string","description":"A file that contains the symbol."}},"required":["symbol","newName","filePath"]}`},

	// execute
	{Name: "execute/runInTerminal", ID: "run_in_terminal",
		Description: "Run a shell command in a terminal and return its output. Long-running commands can run in the background; check them later with getTerminalOutput.",
		Schema:      `{"type":"object","properties":{"command":{"type":"string","description":"The command to run."},"explanation":{"type":"string","description":"A one-sentence description of what the command does, shown to the user."},"isBackground":{"type":"boolean","description":"Whether the command starts a background process such as a server or a watcher."}},"required":["command","explanation","isBackground"]}`},
	{Name: "execute/getTerminalOutput", ID: "get_terminal_output",
		Description: "Get the output of a terminal command previously started in the background with runInTerminal.",
		Schema:      `{"type":"object","properties":{"id":{"type":"string","description":"The ID of the terminal to check."}},"required":["id"]}`},
	{Name: "execute/runTask", ID: "run_task",
		Description: "Run an existing task of the workspace (tasks.json) and return its output.",
		Schema:      `{"type":"object","properties":{"id":{"type":"string","description":"The task's ID."},"workspaceFolder":{"type":"string","description":"The workspace folder that defines the task."}},"required":["id","workspaceFolder"]}`},
	{Name: "execute/getTaskOutput", ID: "get_task_output",
		Description: "Get the output of a task that is running or has run.",
		Schema:      `{"type":"object","properties":{"id":{"type":"string","description":"The task's ID."},"workspaceFolder":{"type":"string","description":"The workspace folder that defines the task."}},"required":["id","workspaceFolder"]}`},
	{Name: "execute/createAndRunTask", ID: "create_and_run_task",
		Description: "Create a build or run task for the workspace in tasks.json and run it.",
		Schema:      `{"type":"object","properties":{"workspaceFolder":{"type":"string","description":"The workspace folder to create the task in."},"task":{"type":"object","description":"The task to create: label, type, command and optional args, isBackground, problemMatcher, group."}},"required":["task","workspaceFolder"]}`},
	{Name: "execute/runTests", ID: "runTests",
		Description: "Run unit tests in files of the workspace and return the results; with no files, run all tests.",
		Schema:      `{"type":"object","properties":{"files":{"type":"array","items":{"type":"string"},"description":"Absolute paths of the test files to run."},"testNames":{"type":"array","items":{"type":"string"},"description":"Names of the tests to run."}}}`},
	{Name: "execute/testFailure", ID: "copilot_testFailure",
		Description: "Get the failure details of the unit tests that failed in the last test run.",
		Schema:      empty},
	{Name: "execute/runNotebookCell", ID: "copilot_runNotebookCell",
		Description: "Run a code cell of a Jupyter notebook and return its output.",
		Schema:      `{"type":"object","properties":{"filePath":{"type":"string","description":"The absolute path to the notebook."},"reason":{"type":"string","description":"Why the cell is run, shown to the user."},"cellId":{"type":"string","description":"The cell to run."},"continueOnError":{"type":"boolean","description":"Whether to keep running when the cell fails."}},"required":["filePath","cellId"]}`},

	// read
	{Name: "read/getNotebookSummary", ID: "copilot_getNotebookSummary",
		Description: "List the cells of a Jupyter notebook with their IDs, languages, execution state and output types.",
		Schema:      `{"type":"object","properties":{"filePath":{"type":"string","description":"The absolute path to the notebook."}},"required":["filePath"]}`},
	{Name: "read/problems", ID: "copilot_getErrors",
		Description: "Get the compile and lint errors of files in the workspace, as the user sees them in the Problems panel.",
		Schema:      `{"type":"object","properties":{"filePaths":{"type":"array","items":{"type":"string"},"description":"Absolute paths of the files to check; all files when omitted."}}}`},
	{Name: "read/readFile", ID: "copilot_readFile",
		Description: "Read lines of a file in the workspace, by line numbers starting at 1.",
		Schema:      `{"type":"object","properties":{"filePath":{"type":"string","description":"The absolute path of the file to read."},"startLine":{"type":"number","description":"The first line to read, from 1."},"endLine":{"type":"number","description":"The last line to read, inclusive."}},"required":["filePath","startLine","endLine"]}`},
	{Name: "read/viewImage", ID: "copilot_viewImage",
		Description: "View an image file of the workspace.",
		Schema:      `{"type":"object","properties":{"filePath":{"type":"string","description":"The absolute path of the image."}},"required":["filePath"]}`},
	{Name: "read/readNotebookCellOutput", ID: "copilot_readNotebookCellOutput",
		Description: "Read the latest output of a Jupyter notebook cell.",
		Schema:      `{"type":"object","properties":{"filePath":{"type":"string","description":"The absolute path to the notebook."},"cellId":{"type":"string","description":"The cell whose output to read."}},"required":["filePath","cellId"]}`},
	{Name: "read/terminalLastCommand", ID: "terminal_last_command",
		Description: "Get the last command run in the active terminal, with its output.",
		Schema:      empty},
	{Name: "read/terminalSelection", ID: "terminal_selection",
		Description: "Get the text selected in the active terminal.",
		Schema:      empty},

	// search
	{Name: "search/changes", ID: "copilot_getChangedFiles",
		Description: "Get the git diffs of the current file changes in a repository of the workspace.",
		Schema:      `{"type":"object","properties":{"repositoryPath":{"type":"string","description":"The absolute path to the repository; the workspace's repository when omitted."},"sourceControlState":{"type":"array","items":{"type":"string","enum":["staged","unstaged","merge-conflicts"]},"description":"Which changes to include; all when omitted."}}}`},
	{Name: "search/codebase", ID: "copilot_searchCodebase",
		Description: "Search the workspace for the code or documentation most relevant to a natural-language question.",
		Schema:      `{"type":"object","properties":{"query":{"type":"string","description":"The question or description of the code to find."}},"required":["query"]}`},
	{Name: "search/fileSearch", ID: "copilot_findFiles",
		Description: "Find files in the workspace whose paths match a glob pattern.",
		Schema:      `{"type":"object","properties":{"query":{"type":"string","description":"A glob pattern, such as **/*.go."},"maxResults":{"type":"number","description":"The most results to return."}},"required":["query"]}`},
	{Name: "search/listDirectory", ID: "copilot_listDirectory",
		Description: "List the contents of a directory of the workspace; a name ending in / is a folder.",
		Schema:      `{"type":"object","properties":{"path":{"type":"string","description":"The absolute path of the directory."}},"required":["path"]}`},
	{Name: "search/searchResults", ID: "copilot_getSearchResults",
		Description: "Get the results of the search view of the workspace.",
		Schema:      empty},
	{Name: "search/textSearch", ID: "copilot_findTextInFiles",
		Description: "Search the files of the workspace for exact text or a regular expression, and return the matching lines.",
		Schema:      `{"type":"object","properties":{"query":{"type":"string","description":"The text or regular expression to find."},"isRegexp":{"type":"boolean","description":"Whether query is a regular expression."},"includePattern":{"type":"string","description":"A glob pattern limiting the files searched."},"maxResults":{"type":"number","description":"The most results to return."}},"required":["query","isRegexp"]}`},
	{Name: "search/usages", ID: "copilot_listCodeUsages",
		Description: "List the definitions, references and implementations of a code symbol.",
		Schema:      `{"type":"object","properties":{"symbol":{"type":"string","description":"The symbol's name (a function, class or variable)."},"filePath":{"type":"string","description":"A file to search first."}},"required":["symbol"]}`},

	// web
	{Name: "web/fetch", ID: "copilot_fetchWebPage",
		Description: "Fetch the main content of web pages, to summarize or answer questions about them.",
		Schema:      `{"type":"object","properties":{"urls":{"type":"array","items":{"type":"string"},"description":"The URLs to fetch."},"query":{"type":"string","description":"What to look for in the pages."}},"required":["urls","query"]}`},
	{Name: "web/githubRepo", ID: "copilot_githubRepo",
		Description: "Search a GitHub repository for code relevant to a question.",
		Schema:      `{"type":"object","properties":{"repo":{"type":"string","description":"The repository, as owner/repo."},"query":{"type":"string","description":"What to search for."}},"required":["repo","query"]}`},

	// vscode
	{Name: "vscode/askQuestions", ID: "vscode_askQuestions", IDs: []string{"copilot_askQuestions"},
		Description: "Ask the user a few clarifying questions before going on, each with a short header and optional fixed choices.",
		Schema:      `{"type":"object","properties":{"questions":{"type":"array","minItems":1,"items":{"type":"object","properties":{"header":{"type":"string","description":"A short label for the question."},"question":{"type":"string","description":"The question."},"options":{"type":"array","items":{"type":"object","properties":{"label":{"type":"string"},"description":{"type":"string"},"recommended":{"type":"boolean"}},"required":["label"]}},"multiSelect":{"type":"boolean"},"allowFreeformInput":{"type":"boolean"}},"required":["header","question"]},"description":"The questions, in order."}},"required":["questions"]}`},
	{Name: "vscode/extensions", ID: "vscode_searchExtensions_internal",
		Description: "Search the VS Code Extensions Marketplace.",
		Schema:      `{"type":"object","properties":{"category":{"type":"string","description":"A Marketplace category."},"keywords":{"type":"array","items":{"type":"string"},"description":"Keywords to search for."},"ids":{"type":"array","items":{"type":"string"},"description":"Extension IDs to look up."}}}`},
	{Name: "vscode/getProjectSetupInfo", ID: "copilot_getProjectSetupInfo",
		Description: "Get the setup steps for a new project of a given type.",
		Schema:      `{"type":"object","properties":{"projectType":{"type":"string","description":"The kind of project, such as python-script or next-js."}},"required":["projectType"]}`},
	{Name: "vscode/installExtension", ID: "copilot_installExtension",
		Description: "Install a VS Code extension by its ID.",
		Schema:      `{"type":"object","properties":{"id":{"type":"string","description":"The extension's ID."},"name":{"type":"string","description":"The extension's name."}},"required":["id","name"]}`},
	{Name: "vscode/newWorkspace", ID: "copilot_createNewWorkspace",
		Description: "Get the steps to set up a complete new project in a new workspace.",
		Schema:      `{"type":"object","properties":{"query":{"type":"string","description":"The description of the project to create."}},"required":["query"]}`},
	{Name: "vscode/runCommand", ID: "copilot_runVscodeCommand",
		Description: "Run a VS Code command.",
		Schema:      `{"type":"object","properties":{"commandId":{"type":"string","description":"The command's ID."},"name":{"type":"string","description":"The command's name."},"args":{"type":"array","items":{},"description":"The command's arguments."}},"required":["commandId","name"]}`},
	{Name: "vscode/vscodeAPI", ID: "copilot_getVSCodeAPI",
		Description: "Get VS Code API references, to answer questions about writing VS Code extensions.",
		Schema:      `{"type":"object","properties":{"query":{"type":"string","description":"The question about the VS Code API."}},"required":["query"]}`},

	// agent
	{Name: "agent/runSubagent", ID: "runSubagent",
		Description: "Run a task in a subagent with its own context and get its final answer back.",
		Schema:      `{"type":"object","properties":{"prompt":{"type":"string","description":"The detailed task for the subagent."},"description":{"type":"string","description":"A short description of the task."}},"required":["prompt","description"]}`},

	// tools outside any set
	{Name: "findTestFiles", ID: "copilot_findTestFiles",
		Description: "For source files, find their test files; for test files, find the source files they test.",
		Schema:      `{"type":"object","properties":{"filePaths":{"type":"array","items":{"type":"string"},"description":"Absolute paths of the files."}},"required":["filePaths"]}`},
	{Name: "todo", ID: "manage_todo_list",
		Description: "Keep a structured todo list of the current task: write the whole list, with each item's status.",
		Schema:      `{"type":"object","properties":{"todoList":{"type":"array","items":{"type":"object","properties":{"id":{"type":"number"},"title":{"type":"string"},"status":{"type":"string","enum":["not-started","in-progress","completed"]}},"required":["id","title","status"]},"description":"The complete todo list."}},"required":["todoList"]}`},
}

// sets are VS Code's tool sets with their members (full reference names).
// A member's set is the prefix of its name.
var sets = []Set{
	{Name: "edit", Members: []string{"edit/createDirectory", "edit/createFile", "edit/createJupyterNotebook", "edit/editFiles", "edit/editNotebook", "edit/rename"}},
	{Name: "execute", Members: []string{"execute/runInTerminal", "execute/getTerminalOutput", "execute/runTask", "execute/getTaskOutput", "execute/createAndRunTask", "execute/runTests", "execute/testFailure", "execute/runNotebookCell"}},
	{Name: "read", Members: []string{"read/getNotebookSummary", "read/problems", "read/readFile", "read/viewImage", "read/readNotebookCellOutput", "read/terminalLastCommand", "read/terminalSelection"}},
	{Name: "search", Members: []string{"search/changes", "search/codebase", "search/fileSearch", "search/listDirectory", "search/searchResults", "search/textSearch", "search/usages"}},
	{Name: "web", Members: []string{"web/fetch", "web/githubRepo"}},
	{Name: "vscode", Members: []string{"vscode/askQuestions", "vscode/extensions", "vscode/getProjectSetupInfo", "vscode/installExtension", "vscode/newWorkspace", "vscode/runCommand", "vscode/vscodeAPI"}},
	{Name: "agent", Members: []string{"agent/runSubagent"}},
}

// legacyTools are older names VS Code still resolves to one tool. Besides
// these, a set member's bare reference name (`codebase`, `editFiles`)
// resolves to it: that is how files written before the sets named them.
var legacyTools = map[string]string{
	"newJupyterNotebook":                  "edit/createJupyterNotebook",
	"runCommands/runInTerminal":           "execute/runInTerminal",
	"runCommands/getTerminalOutput":       "execute/getTerminalOutput",
	"runCommands/terminalLastCommand":     "read/terminalLastCommand",
	"runCommands/terminalSelection":       "read/terminalSelection",
	"runTasks/runTask":                    "execute/runTask",
	"runTasks/getTaskOutput":              "execute/getTaskOutput",
	"runTasks/createAndRunTask":           "execute/createAndRunTask",
	"runNotebooks/runCell":                "execute/runNotebookCell",
	"runNotebooks/getNotebookSummary":     "read/getNotebookSummary",
	"runNotebooks/readNotebookCellOutput": "read/readNotebookCellOutput",
	"search/readFile":                     "read/readFile",
	"new/newWorkspace":                    "vscode/newWorkspace",
	"new/getProjectSetupInfo":             "vscode/getProjectSetupInfo",
	"new/installExtension":                "vscode/installExtension",
	"new/runVscodeCommand":                "vscode/runCommand",
	"todos":                               "todo",
	"runSubagent":                         "agent/runSubagent",
}

// legacySets are older set names VS Code still resolves, with the tools
// they stood for.
var legacySets = map[string][]string{
	"runCommands":  {"execute/runInTerminal", "execute/getTerminalOutput", "read/terminalLastCommand", "read/terminalSelection"},
	"runTasks":     {"execute/runTask", "execute/getTaskOutput", "execute/createAndRunTask"},
	"runNotebooks": {"execute/runNotebookCell", "read/getNotebookSummary", "read/readNotebookCellOutput"},
	"new":          {"vscode/newWorkspace", "vscode/getProjectSetupInfo", "vscode/installExtension", "vscode/runCommand"},
}
