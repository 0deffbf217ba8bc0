//! Every MCP method and notification name the client sends or reads, once. A leaf module
//! (it imports nothing), so every layer can name them without importing one above it.

// Requests.
/// `completion/complete`.
pub(crate) const COMPLETION_COMPLETE: &str = "completion/complete";
/// `elicitation/create`.
pub(crate) const ELICITATION_CREATE: &str = "elicitation/create";
/// `initialize`.
pub(crate) const INITIALIZE: &str = "initialize";
/// `logging/setLevel`.
pub(crate) const LOGGING_SET_LEVEL: &str = "logging/setLevel";
/// `ping`.
pub(crate) const PING: &str = "ping";
/// `prompts/get`.
pub(crate) const PROMPTS_GET: &str = "prompts/get";
/// `prompts/list`.
pub(crate) const PROMPTS_LIST: &str = "prompts/list";
/// `resources/list`.
pub(crate) const RESOURCES_LIST: &str = "resources/list";
/// `resources/read`.
pub(crate) const RESOURCES_READ: &str = "resources/read";
/// `resources/directory/read` (the skills extension).
pub(crate) const RESOURCES_DIRECTORY_READ: &str = "resources/directory/read";
/// `resources/subscribe`.
pub(crate) const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
/// `resources/templates/list`.
pub(crate) const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// `resources/unsubscribe`.
pub(crate) const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
/// `skills/get` (the skills extension).
pub(crate) const SKILLS_GET: &str = "skills/get";
/// `skills/list` (the skills extension).
pub(crate) const SKILLS_LIST: &str = "skills/list";
/// `roots/list`.
pub(crate) const ROOTS_LIST: &str = "roots/list";
/// `sampling/createMessage`.
pub(crate) const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
/// `server/discover`.
pub(crate) const SERVER_DISCOVER: &str = "server/discover";
/// `subscriptions/listen`.
pub(crate) const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
/// `tasks/cancel`.
pub(crate) const TASKS_CANCEL: &str = "tasks/cancel";
/// `tasks/get`.
pub(crate) const TASKS_GET: &str = "tasks/get";
/// `tasks/list`.
pub(crate) const TASKS_LIST: &str = "tasks/list";
/// `tasks/result`.
pub(crate) const TASKS_RESULT: &str = "tasks/result";
/// `tasks/update` (the 2026-07-28 tasks extension: answers to a task's input requests).
pub(crate) const TASKS_UPDATE: &str = "tasks/update";
/// `tools/call`.
pub(crate) const TOOLS_CALL: &str = "tools/call";
/// `tools/list`.
pub(crate) const TOOLS_LIST: &str = "tools/list";

// Notifications.
/// `notifications/cancelled`.
pub(crate) const CANCELLED: &str = "notifications/cancelled";
/// `notifications/initialized`.
pub(crate) const INITIALIZED: &str = "notifications/initialized";
/// `notifications/message`.
pub(crate) const LOG_MESSAGE: &str = "notifications/message";
/// `notifications/progress`.
pub(crate) const PROGRESS: &str = "notifications/progress";
/// `notifications/prompts/list_changed`.
pub(crate) const PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
/// `notifications/resources/list_changed`.
pub(crate) const RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
/// `notifications/resources/updated`.
pub(crate) const RESOURCES_UPDATED: &str = "notifications/resources/updated";
/// `notifications/roots/list_changed`.
pub(crate) const ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
/// `notifications/tasks/status`.
pub(crate) const TASK_STATUS: &str = "notifications/tasks/status";
/// `notifications/tasks` (the tasks extension's later name for a task's new status).
pub(crate) const TASKS_NOTIFICATION: &str = "notifications/tasks";
/// `notifications/tools/list_changed`.
pub(crate) const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
