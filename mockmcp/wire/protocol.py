"""Names and numbers of MCP revision 2026-07-28 that the rest of mockmcp relies on.

Everything here is plain data so that the sans-I/O core, the scenario checker and
the client verifier agree on one spelling of each rule.
"""

from __future__ import annotations

LATEST_VERSION = "2026-07-28"
LEGACY_VERSION = "2025-11-25"
# methods of the handshake era that carry connection state (served in legacy sessions only)
LEGACY_SET_LEVEL = "logging/setLevel"
LEGACY_SUBSCRIBE = "resources/subscribe"
LEGACY_UNSUBSCRIBE = "resources/unsubscribe"
JSONRPC_VERSION = "2.0"

# Reserved _meta keys.
META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
META_PROGRESS_TOKEN = "progressToken"

# JSON-RPC and MCP error codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
HEADER_MISMATCH = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022

# Client-to-server requests of this revision.
DISCOVER = "server/discover"
TOOLS_LIST = "tools/list"
TOOLS_CALL = "tools/call"
PROMPTS_LIST = "prompts/list"
PROMPTS_GET = "prompts/get"
RESOURCES_LIST = "resources/list"
RESOURCES_READ = "resources/read"
RESOURCE_TEMPLATES_LIST = "resources/templates/list"
COMPLETE = "completion/complete"
SUBSCRIPTIONS_LISTEN = "subscriptions/listen"
INITIALIZE = "initialize"
# The Tasks extension (io.modelcontextprotocol/tasks): its methods, notification and name.
TASKS_GET = "tasks/get"
TASKS_UPDATE = "tasks/update"
TASKS_CANCEL = "tasks/cancel"
TASKS_NOTIFICATION = "notifications/tasks"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TASK_METHODS = frozenset({TASKS_GET, TASKS_UPDATE, TASKS_CANCEL})
# Requests that may answer resultType "task" (the extension's supported methods).
TASK_AUGMENTABLE = frozenset({TOOLS_CALL})

CLIENT_REQUESTS = frozenset(
    {
        DISCOVER,
        TOOLS_LIST,
        TOOLS_CALL,
        PROMPTS_LIST,
        PROMPTS_GET,
        RESOURCES_LIST,
        RESOURCES_READ,
        RESOURCE_TEMPLATES_LIST,
        COMPLETE,
        SUBSCRIPTIONS_LISTEN,
        TASKS_GET,
        TASKS_UPDATE,
        TASKS_CANCEL,
    }
)

# Methods whose complete results must carry ttlMs and cacheScope.
CACHEABLE = frozenset(
    {DISCOVER, TOOLS_LIST, PROMPTS_LIST, RESOURCES_LIST, RESOURCE_TEMPLATES_LIST, RESOURCES_READ}
)
# Methods that may answer with resultType "input_required".
INPUT_REQUIRED_METHODS = frozenset({TOOLS_CALL, PROMPTS_GET, RESOURCES_READ})
PAGINATED = frozenset({TOOLS_LIST, PROMPTS_LIST, RESOURCES_LIST, RESOURCE_TEMPLATES_LIST})

# Notifications.
CANCELLED = "notifications/cancelled"
PROGRESS = "notifications/progress"
MESSAGE = "notifications/message"
TOOLS_LIST_CHANGED = "notifications/tools/list_changed"
PROMPTS_LIST_CHANGED = "notifications/prompts/list_changed"
RESOURCES_LIST_CHANGED = "notifications/resources/list_changed"
RESOURCES_UPDATED = "notifications/resources/updated"
SUBSCRIPTIONS_ACKNOWLEDGED = "notifications/subscriptions/acknowledged"

# Subscription filter field for each event a scenario can emit.
EVENT_FILTER_FIELD = {
    "tools/list_changed": "toolsListChanged",
    "prompts/list_changed": "promptsListChanged",
    "resources/list_changed": "resourcesListChanged",
    "resources/updated": "resourceSubscriptions",
}
EVENT_METHOD = {
    "tools/list_changed": TOOLS_LIST_CHANGED,
    "prompts/list_changed": PROMPTS_LIST_CHANGED,
    "resources/list_changed": RESOURCES_LIST_CHANGED,
    "resources/updated": RESOURCES_UPDATED,
}

# Methods this revision removed; a client sending them is out of date.
REMOVED_METHODS = frozenset(
    {"notifications/initialized", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}
)

# What `protocol.unmatched: fail` (a cassette's replay) still answers the built-in way: the
# protocol's plumbing, whose answers follow from the scenario's identity, definitions and the
# connection's own state (a cassette records these as the server's identity, lists and
# capabilities, not as calls). Every other request no rule answers fails with the near miss.
BUILTIN_WHEN_UNMATCHED = frozenset(
    {
        "ping",
        INITIALIZE,
        DISCOVER,
        TOOLS_LIST,
        PROMPTS_LIST,
        RESOURCES_LIST,
        RESOURCE_TEMPLATES_LIST,
        SUBSCRIPTIONS_LISTEN,
        LEGACY_SET_LEVEL,
        LEGACY_SUBSCRIBE,
        LEGACY_UNSUBSCRIBE,
        TASKS_GET,
        TASKS_UPDATE,
        TASKS_CANCEL,
    }
)

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
LOG_LEVEL_RANK = {name: rank for rank, name in enumerate(LOG_LEVELS)}

# Input request kinds (method of an InputRequest) and the capability each needs.
ELICIT = "elicitation/create"
SAMPLE = "sampling/createMessage"
LIST_ROOTS = "roots/list"
INPUT_REQUEST_METHODS = frozenset({ELICIT, SAMPLE, LIST_ROOTS})
