"""Test doubles of the LLM layer (not used by any shipped pipeline path).

* ``fake_server`` — :class:`~agents.testing.fake_server.FakeLLMServer`, a scriptable fake
  OpenAI-compatible server on 127.0.0.1 (tests, benchmarks, ``mtr fake-llm``)
* ``fake_roles``  — :class:`~agents.testing.fake_roles.RoleScriptedServer`, which answers each
  synthesis role plausibly (role picked by the requested response schema's name)
* ``fake_http``   — its sockets and request handler
* ``fake_schema`` — deterministic instances of a JSON schema (its automatic answers)
"""
