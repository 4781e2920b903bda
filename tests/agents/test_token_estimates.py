"""Tokens of an agent run where the endpoint does not count them: estimated with the chunker's
``estimate_tokens``, so Chinese, Japanese and Korean text is charged a token a character (a quarter
of the characters or bytes made a Chinese reply four times cheaper than it is)."""

from __future__ import annotations

import json

import mcp.types as t

from context_harness.agents.chat import OpenAIChat
from context_harness.common.text import estimate_tokens
from context_harness.config import ModelConfig
from context_harness.server.lending import from_sampling

CHINESE = "我们的发布流程需要先在预发布环境中完成回归测试。测试通过以后，由值班工程师登记发布窗口。" * 8


def test_an_endpoint_reply_without_usage_counts_each_cjk_character() -> None:
    chat = OpenAIChat("local", ModelConfig(url="http://127.0.0.1:9/v1", model="local"))
    # as servers send it: UTF-8, not \u escapes (3 bytes a character)
    data = json.dumps({"choices": [{"message": {"role": "assistant", "content": CHINESE}, "finish_reason": "stop"}]},
                      ensure_ascii=False).encode()
    reply = chat._reply(data, sent=1)
    assert reply.completion_tokens == estimate_tokens(CHINESE) >= len(CHINESE) * 0.9
    english = chat._reply(json.dumps({"choices": [{"message": {"content": "Run the regression tests first."}}]})
                          .encode(), sent=1)
    assert english.completion_tokens == 8  # five words (regression: three pieces) and a full stop


def test_a_sampled_reply_counts_each_cjk_character() -> None:
    result = t.CreateMessageResult(role="assistant", content=t.TextContent(type="text", text=CHINESE),
                                   model="client-model", stopReason="endTurn")
    assert from_sampling(result).completion_tokens == estimate_tokens(CHINESE) >= len(CHINESE) * 0.9
