//! Tool calls run as tasks, in both revisions (one code path; [`TaskFlow`] is where they
//! differ), and the task methods of [`Client`].

use super::*;

/// The shortest wait between two `tasks/get` of one task, whatever its `pollInterval` says.
pub const MIN_TASK_POLL: Duration = Duration::from_millis(100);

/// The longest wait between two `tasks/get` of one task, whatever its `pollInterval` says.
pub const MAX_TASK_POLL: Duration = Duration::from_secs(10);

/// The wait between two `tasks/get` of a task whose server suggests none.
pub const DEFAULT_TASK_POLL: Duration = Duration::from_secs(1);

/// How long a `tasks/cancel` sent for a call that ended (dropped, timed out) may take.
const TASK_CANCEL_TIMEOUT: Duration = Duration::from_secs(10);

/// Most input requests (elicitation, sampling, roots) answered for one task of the 2026-07-28
/// tasks extension, over its whole life.
const MAX_TASK_INPUTS: usize = 64;

/// How a server runs a tool call as a task: the one place where the two revisions differ.
/// Everything else (the clock, polling at the suggested interval, status notifications,
/// progress, cancelling on deadline or drop) is one code path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TaskFlow {
    /// 2025-11-25: the call asks (`params.task`) when the server declares task-augmented
    /// `tools/call` and the tool allows it; polling stops at `input_required` or the end, and
    /// `tasks/result` carries the input requests (as server requests) and the result.
    Augmented,
    /// 2026-07-28's `io.modelcontextprotocol/tasks` extension: the client opts in with its
    /// capabilities and the server decides (`resultType: "task"`); `tasks/get` carries the
    /// input requests, answered with `tasks/update`, and the ended task its result or error.
    Extension,
}

/// Sends `tasks/cancel` for a task whose call ended before the task did (dropped, timed
/// out), on a task of its own within [`TASK_CANCEL_TIMEOUT`], unless disarmed.
struct TaskCanceller {
    session: Option<Session>,
    task_id: String,
}

impl Drop for TaskCanceller {
    fn drop(&mut self) {
        let Some(session) = self.session.take() else {
            return;
        };
        if session.closed_reason().is_some() {
            return;
        }
        let task_id = std::mem::take(&mut self.task_id);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let options = RequestOptions {
                    timeout: Some(TASK_CANCEL_TIMEOUT),
                    ..Default::default()
                };
                let params = json!({"taskId": task_id});
                if let Err(e) = session
                    .request(methods::TASKS_CANCEL, Some(params), options)
                    .await
                {
                    tracing::debug!(server = %session.server(), "tasks/cancel: {e}");
                }
            });
        }
    }
}

/// The deadline of a call run as a task: its timeout, restarted by progress when the call
/// asks, never past its longest duration.
struct TaskClock {
    started: tokio::time::Instant,
    timeout: Duration,
    deadline: tokio::time::Instant,
    latest: tokio::time::Instant,
    restarts: bool,
}

impl TaskClock {
    fn new(options: &RequestOptions, default: Duration) -> TaskClock {
        let started = tokio::time::Instant::now();
        let timeout = options.timeout.unwrap_or(default);
        let longest = options
            .max_duration
            .unwrap_or(DEFAULT_MAX_DURATION)
            .max(timeout);
        TaskClock {
            started,
            timeout,
            deadline: started + timeout,
            latest: started + longest,
            restarts: options.progress_resets_timeout,
        }
    }

    /// What is left before the latest end, for a request under this clock (at least 1 ms).
    fn left(&self) -> Duration {
        let end = if self.restarts {
            self.latest
        } else {
            self.deadline
        };
        end.saturating_duration_since(tokio::time::Instant::now())
            .max(Duration::from_millis(1))
    }

    fn progressed(&mut self) {
        if self.restarts {
            self.deadline = (tokio::time::Instant::now() + self.timeout).min(self.latest);
        }
    }
}

impl Client {
    /// Whether the server speaks the 2026-07-28 revision and declared its tasks extension
    /// (then every request declares it too).
    pub(super) fn has_task_extension(&self) -> bool {
        self.details.era == Era::Stateless
            && era::declares_tasks(&json!({"capabilities": self.details.capabilities}))
    }

    /// How a call of `tool` may run as a task, if it may. 2026-07-28: whenever the server
    /// declared the tasks extension (the server decides), unless `mode` is `Never`.
    /// 2025-11-25: the server declares task-augmented `tools/call`, and the tool, as last
    /// listed (listed now if it never was), asks for it as `mode` says.
    pub(super) async fn task_flow(&self, tool: &str, mode: TaskMode) -> Option<TaskFlow> {
        if mode == TaskMode::Never {
            return None;
        }
        if self.details.era == Era::Stateless {
            return self.has_task_extension().then_some(TaskFlow::Extension);
        }
        // Looked up member by member: `pointer` splits and unescapes the path on every call.
        let declared = ["tasks", "requests", "tools", "call"]
            .iter()
            .try_fold(&self.details.capabilities, |v, key| v.get(key))
            .is_some_and(|v| !v.is_null());
        if !declared {
            return None;
        }
        let cached = |tools: &Mutex<Option<ToolCache>>| {
            let cache = tools.lock().expect("tools lock");
            cache.as_ref().map(|c| {
                c.tools
                    .iter()
                    .find(|t| t.name == tool)
                    .map(Tool::task_support)
            })
        };
        let support = match cached(&self.tools) {
            Some(support) => support,
            None => match self.list_tools().await {
                Ok(tools) => tools
                    .iter()
                    .find(|t| t.name == tool)
                    .map(Tool::task_support),
                Err(e) => {
                    tracing::debug!(server = %self.name(), "listing tools to see how {tool} is called: {e}");
                    None
                }
            },
        };
        let runs = match support {
            Some(TaskSupport::Required) => true,
            Some(TaskSupport::Optional) => mode == TaskMode::WhenSupported,
            _ => false,
        };
        runs.then_some(TaskFlow::Augmented)
    }

    /// A tool call run as a task (see [`call_tool_with`](Self::call_tool_with)).
    pub(super) async fn call_as_task(
        &self,
        tool: &str,
        arguments: Value,
        options: RequestOptions,
        flow: TaskFlow,
    ) -> Result<ToolOutput> {
        const METHOD: &str = methods::TOOLS_CALL;
        let mut clock = TaskClock::new(&options, self.session.default_timeout());
        let watch = self.session.watch_progress(options.on_progress.clone());
        // The polls carry the caller's trace context too: they are part of the call.
        let trace = options.trace.clone();
        let headers = self.param_headers(tool, &arguments);
        let mut params = serde_json::Map::new();
        params.insert("name".into(), Value::String(tool.into()));
        params.insert("arguments".into(), arguments);
        let sent = RequestOptions {
            timeout: Some(clock.left()),
            headers,
            on_progress: None,
            task: TaskMode::Never,
            ..options
        };
        let reply = match flow {
            TaskFlow::Augmented => {
                params.insert("task".into(), json!({}));
                let params = Value::Object(params);
                let created = self
                    .session
                    .request_watched(METHOD, Some(&params), sent, &watch);
                self.within(&mut clock, &watch, METHOD, created).await??
            }
            TaskFlow::Extension => {
                // The server may ask for input before it decides (multi round-trip): each
                // round is a request of its own, its progress going to the watch.
                let params = Value::Object(params);
                let sent = RequestOptions {
                    on_progress: Some(watch.callback()),
                    ..sent
                };
                let created = self.session.request_reply(METHOD, Some(&params), sent);
                self.within(&mut clock, &watch, METHOD, created).await??
            }
        };
        let Some(mut task) = reply.created_task() else {
            // The server carried the call out at once.
            return self.tool_output(reply);
        };
        let mut canceller = TaskCanceller {
            session: Some(self.session.clone()),
            task_id: task.task_id.clone(),
        };
        let mut statuses = self.session.notifications();
        // A new status or status message goes to the progress callback too.
        let shown = |t: &Task| (t.status.clone(), t.status_message.clone());
        let report = |t: &Task| watch.report(t.status.as_str(), t.status_message.as_deref());
        let mut last_shown = shown(&task);
        report(&task);
        // A status worth polling for at once when the server tells of it.
        let quick = |t: &Task| t.status.is_terminal() || t.status == TaskStatus::InputRequired;
        // Where polling stops: 2025-11-25 hands input requests to `tasks/result`.
        let stops = |t: &Task| match flow {
            TaskFlow::Augmented => quick(t),
            TaskFlow::Extension => t.status.is_terminal(),
        };
        // The keys of the input requests answered (each is answered once).
        let mut answered = HashSet::new();
        // Bounded by the clock: every turn waits at least MIN_TASK_POLL or ends the call.
        while !stops(&task) {
            if task.status == TaskStatus::InputRequired {
                self.answer_task_input(&mut clock, &watch, &task, &mut answered, &trace)
                    .await?;
            }
            let pause = task
                .poll_interval()
                .unwrap_or(DEFAULT_TASK_POLL)
                .clamp(MIN_TASK_POLL, MAX_TASK_POLL);
            let wake = tokio::time::Instant::now() + pause;
            let told = async {
                loop {
                    match statuses.recv().await {
                        Ok(n)
                            if n.method == methods::TASK_STATUS
                                || n.method == methods::TASKS_NOTIFICATION =>
                        {
                            let told = n.params.as_ref().map(Task::deserialize);
                            if let Some(Ok(told)) = told
                                && told.task_id == task.task_id
                                && quick(&told)
                            {
                                return;
                            }
                        }
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                        Err(broadcast::error::RecvError::Closed) => {
                            std::future::pending::<()>().await
                        }
                    }
                }
            };
            let waited = async {
                tokio::select! {
                    () = tokio::time::sleep_until(wake) => {}
                    () = told => {}
                }
                Ok::<(), Error>(())
            };
            self.within(&mut clock, &watch, methods::TASKS_GET, waited)
                .await??;
            let get = RequestOptions {
                timeout: Some(clock.left()),
                trace: trace.clone(),
                ..Default::default()
            };
            let params = json!({"taskId": task.task_id});
            let asked = self
                .session
                .request_as::<Task>(methods::TASKS_GET, Some(params), get);
            let (polled, _) = self
                .within(&mut clock, &watch, methods::TASKS_GET, asked)
                .await??;
            if polled.task_id != task.task_id {
                let why = format!(
                    "tasks/get for task {:?} answered task {:?}",
                    task.task_id, polled.task_id
                );
                return Err(self.error(methods::TASKS_GET, ErrorKind::Protocol(why)));
            }
            task = polled;
            if shown(&task) != last_shown {
                last_shown = shown(&task);
                report(&task);
            }
        }
        if flow == TaskFlow::Extension {
            // The task has ended, its outcome inlined: nothing to cancel.
            canceller.session = None;
            return self.ended_task_output(&task);
        }
        let fetch = RequestOptions {
            timeout: Some(clock.left()),
            trace,
            ..Default::default()
        };
        let params = json!({"taskId": task.task_id});
        let fetched = self
            .session
            .request_reply(methods::TASKS_RESULT, Some(&params), fetch);
        let reply = self
            .within(&mut clock, &watch, methods::TASKS_RESULT, fetched)
            .await??;
        // The task has ended: nothing to cancel.
        canceller.session = None;
        self.tool_output(reply)
    }

    /// 2026-07-28: answers the input requests of a task in `input_required` that were not
    /// answered yet, through the embedder's handlers, and sends the answers (`tasks/update`),
    /// under the call's clock.
    async fn answer_task_input(
        &self,
        clock: &mut TaskClock,
        watch: &ProgressWatch,
        task: &Task,
        answered: &mut HashSet<String>,
        trace: &Option<crate::TraceContext>,
    ) -> Result<()> {
        const METHOD: &str = methods::TASKS_UPDATE;
        let Some(raw) = task.member("inputRequests") else {
            return Ok(());
        };
        let protocol = |why: String| self.error(METHOD, ErrorKind::Protocol(why));
        let requests: serde_json::Map<String, Value> = serde_json::from_str(raw.get())
            .map_err(|e| protocol(format!("the task's inputRequests are not an object: {e}")))?;
        let fresh: serde_json::Map<String, Value> = requests
            .into_iter()
            .filter(|(key, _)| !answered.contains(key))
            .collect();
        if fresh.is_empty() {
            return Ok(());
        }
        if answered.len() + fresh.len() > MAX_TASK_INPUTS {
            return Err(protocol(format!(
                "the task asked for more than {MAX_TASK_INPUTS} inputs"
            )));
        }
        let answering = self.session.answer_input_requests(METHOD, &fresh);
        let responses = self.within(clock, watch, METHOD, answering).await??;
        answered.extend(fresh.keys().cloned());
        let params = json!({"taskId": task.task_id, "inputResponses": responses});
        let sent = RequestOptions {
            timeout: Some(clock.left()),
            trace: trace.clone(),
            ..Default::default()
        };
        let update = self.session.request(METHOD, Some(params), sent);
        self.within(clock, watch, METHOD, update).await??;
        Ok(())
    }

    /// 2026-07-28: what the model sees of an ended task, from its inlined outcome: the
    /// `result` of a completed one, rendered and capped as any call's; the JSON-RPC `error`
    /// of a failed one; an error for a cancelled one.
    fn ended_task_output(&self, task: &Task) -> Result<ToolOutput> {
        const METHOD: &str = methods::TASKS_GET;
        let protocol = |why: String| self.error(METHOD, ErrorKind::Protocol(why));
        let said = task
            .status_message
            .as_deref()
            .map(|m| format!(": {m:?}"))
            .unwrap_or_default();
        match task.status {
            TaskStatus::Completed => {
                let Some(result) = task.member("result") else {
                    return Err(protocol(format!(
                        "task {:?} completed without a result",
                        task.task_id
                    )));
                };
                // The result as the answer to a call, for the renderer every call goes through.
                let message = format!(r#"{{"jsonrpc":"2.0","id":0,"result":{}}}"#, result.get());
                match crate::wire::render::render_reference(message.as_bytes(), self.output_cap) {
                    Ok(r) => Ok(ToolOutput {
                        text: r.text,
                        is_error: r.is_error,
                        total_bytes: r.total,
                    }),
                    Err(RenderError::Rpc(e)) => {
                        Err(self.error(METHOD, ErrorKind::Rpc(Box::new(e))))
                    }
                    Err(e @ RenderError::Invalid(_)) => Err(protocol(format!(
                        "the result of task {:?}: {e}",
                        task.task_id
                    ))),
                }
            }
            TaskStatus::Failed => {
                let error = task
                    .member("error")
                    .and_then(|raw| serde_json::from_str::<ErrorObject>(raw.get()).ok());
                match error {
                    Some(e) => Err(self.error(METHOD, ErrorKind::Rpc(Box::new(e)))),
                    None => Err(protocol(format!(
                        "task {:?} failed without an error{said}",
                        task.task_id
                    ))),
                }
            }
            _ => Err(protocol(format!(
                "task {:?} ended {}{said}",
                task.task_id, task.status
            ))),
        }
    }

    /// Runs `work` of a task call under the call's clock: progress restarts it when the call
    /// asks; `Err` when the clock runs out first (dropping `work`).
    async fn within<T>(
        &self,
        clock: &mut TaskClock,
        watch: &ProgressWatch,
        method: &str,
        work: impl std::future::Future<Output = T>,
    ) -> Result<T> {
        let mut work = std::pin::pin!(work);
        loop {
            tokio::select! {
                done = &mut work => return Ok(done),
                () = tokio::time::sleep_until(clock.deadline) => {
                    let waited = clock.deadline - clock.started;
                    return Err(self.error(method, ErrorKind::Timeout(waited)));
                }
                () = watch.activity().notified() => clock.progressed(),
            }
        }
    }

    /// Lists the server's tasks (`tasks/list`), paged and bounded as
    /// [`list_resources`](Self::list_resources) is. The 2026-07-28 tasks extension has no
    /// such method: for its servers this is a [`ErrorKind::Usage`] error, and nothing is sent.
    pub async fn list_tasks(&self) -> Result<Vec<Task>> {
        if self.details.era == Era::Stateless {
            let why = "the 2026-07-28 revision's tasks extension cannot list tasks: keep the ids of the tasks to follow";
            return Err(self.error(methods::TASKS_LIST, ErrorKind::Usage(why.into())));
        }
        Ok(self.list_all::<TasksPage>().await?.0)
    }

    /// The state of one task (`tasks/get`).
    pub async fn get_task(&self, task_id: &str) -> Result<Task> {
        let params = json!({"taskId": task_id});
        let (task, _) = self
            .session
            .request_as::<Task>(methods::TASKS_GET, Some(params), RequestOptions::default())
            .await?;
        Ok(task)
    }

    /// Cancels a task (`tasks/cancel`) and returns its state after (a task that has already
    /// ended is the server's error, -32602). The 2026-07-28 tasks extension only acknowledges
    /// a cancel, which takes effect when the server can: the state returned is then the next
    /// `tasks/get`'s, which may not be `cancelled` yet.
    pub async fn cancel_task(&self, task_id: &str) -> Result<Task> {
        let params = json!({"taskId": task_id});
        if self.details.era == Era::Stateless {
            self.session
                .request(
                    methods::TASKS_CANCEL,
                    Some(params),
                    RequestOptions::default(),
                )
                .await?;
            return self.get_task(task_id).await;
        }
        let (task, _) = self
            .session
            .request_as::<Task>(
                methods::TASKS_CANCEL,
                Some(params),
                RequestOptions::default(),
            )
            .await?;
        Ok(task)
    }
}
