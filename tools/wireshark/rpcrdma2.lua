-- SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
-- rpcrdma2.lua: a Wireshark dissector for RPC-over-RDMA version 2
-- (draft-cel-nfsv4-rpcrdma-version-two-09), shipped with rpcrdma.
--
--   tshark -X lua_script:/usr/share/rpcrdma/wireshark/rpcrdma2.lua -r cap.pcap
--   wireshark -X lua_script:...   (or copy it to ~/.local/lib/wireshark/plugins/)
--
-- Display filter: rpcrdma2 (fields rpcrdma2.*).  Wireshark's own
-- dissector, rpcordma, knows version 1 only (RFC 8166) and declines
-- anything else; this one takes what it declines.
--
-- Where it hooks in: a heuristic dissector on the iwarp_ddp_rdmap table,
-- the table the iWARP DDP/RDMAP dissector offers the payload of each
-- untagged (Send) DDP segment to -- the same hook rpcordma uses.  A
-- post-dissector would work too, but would have to find the Send
-- payloads in the tree itself; the heuristic gets exactly them.  The
-- payload is claimed when:
--   * it is the first DDP segment of an RDMAP Send (Send, Send with
--     Invalidate, with or without Solicited Event): DDP untagged, MO 0
--     (read from the DDP/RDMAP fields just before the payload), and
--   * its second word, rdma_vers, is 2 and it holds at least the
--     20-byte transport header prefix (section 3.2).
-- A Send split into several DDP segments: Wireshark 4.0 reassembles it
-- itself (preference iwarp_ddp_rdmap.reassemble_iwarp_rdma_send, on by
-- default) and offers the whole message, in a data source of its own, to
-- the same heuristic table; it is taken when its length is the
-- reassembled length Wireshark reports.  With that preference off, the
-- first segment is offered alone: the header is decoded as far as it
-- goes, and the message is marked as continuing (rpcrdma2.continued).
-- (Wireshark 4.0's reassembly offers only one Send per TCP segment to
-- heuristic dissectors, its own rpcordma included: with several Sends in
-- one TCP segment, turn the preference off to see them all.)
--
-- What is decoded (section numbers are the draft's):
--   rpcrdma2_hdr_prefix: xid, vers, credit, htype, flags with
--     RPCRDMA2_F_RESPONSE and the reserved bits (3.2);
--   RDMA2_MSG, RDMA2_NOMSG: rdma_inv_handle and the Read list, Write
--     list and Reply chunk (3.3, 5.3.1, 5.3.2); after RDMA2_MSG the RPC
--     message goes to Wireshark's rpc dissector;
--   RDMA2_ERROR: rdma_err and the body of each error code (5.3.3);
--   RDMA2_CONNPROP: the property set, RDMA2_PROPID_RBSIZ and
--     RDMA2_PROPID_BRS decoded, others shown as opaque (4.1, 4.2, 5.3.4).
-- Protocol rules the draft states with MUST are checked and reported as
-- expert info (warnings), the header itself stays decoded.

local p = Proto("rpcrdma2", "RPC-over-RDMA Version 2")

local htypes = {
	[0] = "RDMA2_MSG", [1] = "RDMA2_NOMSG", [4] = "RDMA2_ERROR",
	[5] = "RDMA2_CONNPROP",
}
local errcodes = {
	[1] = "RDMA2_ERR_VERS", [2] = "RDMA2_ERR_BAD_XDR",
	[3] = "RDMA2_ERR_INVAL_HTYPE", [4] = "RDMA2_ERR_READ_CHUNKS",
	[5] = "RDMA2_ERR_WRITE_CHUNKS", [6] = "RDMA2_ERR_SEGMENTS",
	[7] = "RDMA2_ERR_WRITE_RESOURCE", [8] = "RDMA2_ERR_REPLY_RESOURCE",
	[9] = "RDMA2_ERR_SYSTEM",
}
local propids = { [1] = "RDMA2_PROPID_RBSIZ", [2] = "RDMA2_PROPID_BRS" }
local rvreqsup = {
	[0] = "RDMA2_RVREQSUP_NONE", [1] = "RDMA2_RVREQSUP_INLINE",
	[2] = "RDMA2_RVREQSUP_GENL",
}

local F_RESPONSE = 0x00000001

local f = {
	xid = ProtoField.uint32("rpcrdma2.xid", "XID", base.HEX),
	vers = ProtoField.uint32("rpcrdma2.vers", "Version", base.DEC),
	credit = ProtoField.uint32("rpcrdma2.credit", "Credits", base.DEC),
	htype = ProtoField.uint32("rpcrdma2.htype", "Header type", base.DEC, htypes),
	flags = ProtoField.uint32("rpcrdma2.flags", "Flags", base.HEX),
	response = ProtoField.bool("rpcrdma2.flags.response", "RPCRDMA2_F_RESPONSE",
		32, nil, F_RESPONSE),
	reserved = ProtoField.uint32("rpcrdma2.flags.reserved", "Reserved flags",
		base.HEX, nil, 0xfffffffe),
	inv_handle = ProtoField.uint32("rpcrdma2.inv_handle", "rdma_inv_handle", base.DEC),
	read_segments = ProtoField.uint32("rpcrdma2.read_segments", "Read list segments",
		base.DEC),
	read_position = ProtoField.uint32("rpcrdma2.read.position", "Position", base.DEC),
	read_handle = ProtoField.uint32("rpcrdma2.read.handle", "Handle", base.DEC),
	read_length = ProtoField.uint32("rpcrdma2.read.length", "Length", base.DEC),
	read_offset = ProtoField.uint64("rpcrdma2.read.offset", "Offset", base.HEX),
	write_chunks = ProtoField.uint32("rpcrdma2.write_chunks", "Write list chunks",
		base.DEC),
	write_segments = ProtoField.uint32("rpcrdma2.write.segments", "Segments", base.DEC),
	write_handle = ProtoField.uint32("rpcrdma2.write.handle", "Handle", base.DEC),
	write_length = ProtoField.uint32("rpcrdma2.write.length", "Length", base.DEC),
	write_offset = ProtoField.uint64("rpcrdma2.write.offset", "Offset", base.HEX),
	reply_segments = ProtoField.uint32("rpcrdma2.reply.segments", "Reply chunk segments",
		base.DEC),
	reply_handle = ProtoField.uint32("rpcrdma2.reply.handle", "Handle", base.DEC),
	reply_length = ProtoField.uint32("rpcrdma2.reply.length", "Length", base.DEC),
	reply_offset = ProtoField.uint64("rpcrdma2.reply.offset", "Offset", base.HEX),
	err = ProtoField.uint32("rpcrdma2.err", "rdma_err", base.DEC, errcodes),
	vers_low = ProtoField.uint32("rpcrdma2.err.vers_low", "rdma_vers_low", base.DEC),
	vers_high = ProtoField.uint32("rpcrdma2.err.vers_high", "rdma_vers_high", base.DEC),
	max_chunks = ProtoField.uint32("rpcrdma2.err.max_chunks", "rdma_max_chunks", base.DEC),
	max_segments = ProtoField.uint32("rpcrdma2.err.max_segments", "rdma_max_segments",
		base.DEC),
	chunk_index = ProtoField.uint32("rpcrdma2.err.chunk_index", "rdma_chunk_index",
		base.DEC),
	length_needed = ProtoField.uint32("rpcrdma2.err.length_needed", "rdma_length_needed",
		base.DEC),
	props = ProtoField.uint32("rpcrdma2.props", "Properties", base.DEC),
	prop_id = ProtoField.uint32("rpcrdma2.prop.id", "rdma_which", base.DEC, propids),
	prop_len = ProtoField.uint32("rpcrdma2.prop.length", "rdma_data length", base.DEC),
	prop_default = ProtoField.bool("rpcrdma2.prop.default",
		"Default value (empty rdma_data)"),
	prop_rbsiz = ProtoField.uint32("rpcrdma2.prop.rbsiz", "Receive Buffer Size", base.DEC),
	prop_brs = ProtoField.uint32("rpcrdma2.prop.brs", "Reverse Request Support",
		base.DEC, rvreqsup),
	prop_data = ProtoField.bytes("rpcrdma2.prop.data", "rdma_data"),
	read_list = ProtoField.none("rpcrdma2.read_list", "Read list"),
	read_segment = ProtoField.none("rpcrdma2.read_segment", "Read segment"),
	write_list = ProtoField.none("rpcrdma2.write_list", "Write list"),
	write_chunk = ProtoField.none("rpcrdma2.write_chunk", "Write chunk"),
	reply_chunk = ProtoField.none("rpcrdma2.reply_chunk", "Reply chunk"),
	prop = ProtoField.none("rpcrdma2.prop", "Property"),
	hdr_len = ProtoField.uint32("rpcrdma2.header_length", "Transport header length",
		base.DEC),
	continued = ProtoField.bool("rpcrdma2.continued",
		"Continues in later DDP segments (not reassembled)"),
}
p.fields = f

-- A protocol rule broken (the header is still decoded).
local function warn(abbr, text)
	return ProtoExpert.new("rpcrdma2." .. abbr, text, expert.group.PROTOCOL,
		expert.severity.WARN)
end

local e = {
	truncated = ProtoExpert.new("rpcrdma2.truncated", "Transport header truncated",
		expert.group.MALFORMED, expert.severity.ERROR),
	continued = ProtoExpert.new("rpcrdma2.continued.expert",
		"The message continues in later DDP segments; only its first segment is decoded",
		expert.group.REASSEMBLE, expert.severity.NOTE),
	htype = ProtoExpert.new("rpcrdma2.unknown_htype",
		"Header type not defined by the base protocol (an extension? 9.1)",
		expert.group.UNDECODED, expert.severity.NOTE),
	reserved = warn("reserved_flags",
		"Reserved flag bits set (3.2: the sender MUST set them to zero)"),
	response = warn("response_mismatch",
		"RPCRDMA2_F_RESPONSE differs from the RPC msg_type (3.2 MUST)"),
	error_flag = warn("error_without_response",
		"RDMA2_ERROR without RPCRDMA2_F_RESPONSE (3.2 MUST)"),
	nomsg_empty = warn("nomsg_without_chunks",
		"RDMA2_NOMSG with no chunk: the RPC message is nowhere (5.3.2)"),
	inv_handle = warn("inv_handle_unknown",
		"rdma_inv_handle is not one of this call's handles (3.3)"),
	bad_xdr = warn("prop_bad_xdr",
		"Property data does not fit its type (4.1: RDMA2_ERR_BAD_XDR)"),
}
p.experts = e

-- The DDP/RDMAP fields of the segment whose payload we are given: the
-- untagged DDP header is 18 bytes and ends with MO; the RDMAP opcode is
-- in its second byte.
local fx_mo = Field.new("iwarp_ddp.mo")
local fx_opcode = Field.new("iwarp_rdma.opcode")
local fx_tagged = Field.new("iwarp_ddp.tagged_flag")
local fx_last = Field.new("iwarp_ddp.last_flag")
local fx_reassembled = Field.new("iwarp_rdma.send.reassembled.length")

local RDMAP_SEND = { [3] = true, [4] = true, [5] = true, [6] = true }

-- The value of the last instance of a field located at `at` in the same
-- data source (several FPDUs may share a frame).
local function field_at(fx, at)
	local v
	for _, fi in ipairs({ fx() }) do
		if fi.offset == at then
			v = fi.value
		end
	end
	return v
end

local function ddp_segment(tvb)
	local start = tvb:offset() - 18
	if start < 0 then
		return nil
	end
	local tagged = field_at(fx_tagged, start)
	local opcode = field_at(fx_opcode, start + 1)
	local mo = field_at(fx_mo, start + 14)
	local last = field_at(fx_last, start)
	if tagged ~= false or opcode == nil or mo == nil then
		return nil
	end
	return { send = RDMAP_SEND[opcode] == true, mo = mo, last = last }
end

-- A bounds-checked XDR reader over the payload.
local Reader = {}
Reader.__index = Reader

local function reader(tvb, tree)
	return setmetatable({ tvb = tvb, pos = 0, tree = tree, short = false }, Reader)
end

function Reader:has(n)
	if self.pos + n <= self.tvb:len() then
		return true
	end
	self.short = true
	return false
end

-- Adds a uint32 field at the cursor; returns its value (nil if short).
function Reader:u32(field, tree)
	if not self:has(4) then
		return nil
	end
	local r = self.tvb(self.pos, 4)
	self.pos = self.pos + 4
	if field then
		(tree or self.tree):add(field, r)
	end
	return r:uint()
end

function Reader:u64(field, tree)
	if not self:has(8) then
		return nil
	end
	local r = self.tvb(self.pos, 8)
	self.pos = self.pos + 8
	(tree or self.tree):add(field, r)
	return r:uint64()
end

-- A subtree for a structure starting at the cursor; its length is set
-- when the structure ends (close).
function Reader:open(tree, field, label)
	local item = tree:add(field, self.tvb(self.pos, self.tvb:len() - self.pos))
	if label then
		item:set_text(label)
	end
	return item, self.pos
end

function Reader:close(item, start)
	item:set_len(self.pos - start)
end

-- rpcrdma2_segment: handle, length, offset (3.3).
local function segment(rd, tree, fh, fl, fo, handles)
	local h = rd:u32(fh, tree)
	local l = rd:u32(fl, tree)
	local o = rd:u64(fo, tree)
	if h then
		handles[h] = true
	end
	return h ~= nil and l ~= nil and o ~= nil
end

-- A counted array of segments (a Write chunk or the Reply chunk).
local function chunk(rd, tree, field, label, fcount, fh, fl, fo, handles)
	local ct, start = rd:open(tree, field, label)
	local n = rd:u32(fcount, ct)
	if not n then
		return false
	end
	for _ = 1, n do
		if not segment(rd, ct, fh, fl, fo, handles) then
			return false
		end
	end
	ct:append_text(string.format(": %d segment%s", n, n == 1 and "" or "s"))
	rd:close(ct, start)
	return true
end

-- rpcrdma2_chunk_lists (3.3); returns the set of handles, the number of
-- lists present and whether the lists were complete.
local function chunk_lists(rd, tree)
	local handles = {}
	local present = 0
	if not rd:u32(f.inv_handle) then
		return handles, present, false
	end

	local lt, start = rd:open(tree, f.read_list)
	local nseg = 0
	while true do
		local more = rd:u32()
		if more == nil then
			return handles, present, false
		end
		if more == 0 then
			break
		end
		nseg = nseg + 1
		local st, sstart = rd:open(lt, f.read_segment, "Read segment " .. nseg)
		if not rd:u32(f.read_position, st) or
		    not segment(rd, st, f.read_handle, f.read_length, f.read_offset, handles) then
			return handles, present, false
		end
		rd:close(st, sstart)
	end
	rd:close(lt, start)
	lt:add(f.read_segments, nseg):set_generated()
	lt:append_text(string.format(": %d segment%s", nseg, nseg == 1 and "" or "s"))
	if nseg > 0 then
		present = present + 1
	end

	lt, start = rd:open(tree, f.write_list)
	local nchunks = 0
	while true do
		local more = rd:u32()
		if more == nil then
			return handles, present, false
		end
		if more == 0 then
			break
		end
		nchunks = nchunks + 1
		if not chunk(rd, lt, f.write_chunk, "Write chunk " .. nchunks, f.write_segments,
		    f.write_handle, f.write_length, f.write_offset, handles) then
			return handles, present, false
		end
	end
	rd:close(lt, start)
	lt:add(f.write_chunks, nchunks):set_generated()
	lt:append_text(string.format(": %d chunk%s", nchunks, nchunks == 1 and "" or "s"))
	if nchunks > 0 then
		present = present + 1
	end

	local reply = rd:u32()
	if reply == nil then
		return handles, present, false
	end
	if reply ~= 0 then
		present = present + 1
		if not chunk(rd, tree, f.reply_chunk, nil, f.reply_segments, f.reply_handle,
		    f.reply_length, f.reply_offset, handles) then
			return handles, present, false
		end
	end
	return handles, present, true
end

-- The body of an rpcrdma2_error union (5.3.3).
local function error_body(rd, tree)
	local code = rd:u32(f.err)
	if code == nil then
		return false, nil
	end
	local ok = true
	if code == 1 then
		ok = rd:u32(f.vers_low) ~= nil and rd:u32(f.vers_high) ~= nil
	elseif code == 4 or code == 5 then
		ok = rd:u32(f.max_chunks) ~= nil
	elseif code == 6 then
		ok = rd:u32(f.max_segments) ~= nil
	elseif code == 7 then
		ok = rd:u32(f.chunk_index) ~= nil and rd:u32(f.length_needed) ~= nil
	elseif code == 8 then
		ok = rd:u32(f.length_needed) ~= nil
	end
	return ok, code
end

-- rpcrdma2_connprop: an rpcrdma2_propset (4.1, 5.3.4).
local function connprop(rd, tree)
	local n = rd:u32(f.props)
	if n == nil then
		return false
	end
	for i = 1, n do
		local pt, start = rd:open(tree, f.prop, "Property " .. i)
		local which = rd:u32(f.prop_id, pt)
		local len = rd:u32(f.prop_len, pt)
		if which == nil or len == nil then
			return false
		end
		local padded = len + (4 - len % 4) % 4
		if not rd:has(padded) then
			return false
		end
		local data = rd.tvb(rd.pos, len)
		pt:append_text(": " .. (propids[which] or ("unknown (" .. which .. ")")))
		if propids[which] and len == 0 then
			pt:add(f.prop_default, true):set_generated()
			pt:append_text(" = default")
		elseif propids[which] and len == 4 then
			local v = data:uint()
			pt:add(which == 1 and f.prop_rbsiz or f.prop_brs, data)
			pt:append_text(" = " .. (which == 2 and (rvreqsup[v] or v) or v))
			if which == 2 and not rvreqsup[v] then
				pt:add_proto_expert_info(e.bad_xdr)
			end
		else
			pt:add(f.prop_data, data)
			if propids[which] then
				pt:add_proto_expert_info(e.bad_xdr)
			end
		end
		rd.pos = rd.pos + padded
		rd:close(pt, start)
	end
	return true
end

local rpc = Dissector.get("rpc")

local function dissect(tvb, pinfo, tree, seg)
	local rd = reader(tvb, nil)
	local top = tree:add(p, tvb())
	rd.tree = top
	local xid = rd:u32(f.xid)
	rd:u32(f.vers)
	local credit = rd:u32(f.credit)
	local htype = rd:u32(f.htype)
	local flags = tvb(16, 4):uint()
	local ft = top:add(f.flags, tvb(16, 4))
	ft:add(f.response, tvb(16, 4))
	ft:add(f.reserved, tvb(16, 4))
	rd.pos = 20
	local response = bit32.band(flags, F_RESPONSE) ~= 0
	if bit32.band(flags, 0xfffffffe) ~= 0 then
		ft:add_proto_expert_info(e.reserved)
	end
	local name = htypes[htype] or ("unknown header type " .. htype)
	top:append_text(string.format(", %s, XID 0x%08x, credits %d%s", name, xid, credit,
		response and ", response" or ""))
	pinfo.cols.protocol = "RPCoRDMA2"

	local complete, rpc_at = true, nil
	if htype == 0 or htype == 1 then
		local handles, present, ok = chunk_lists(rd, top)
		complete = ok
		if ok and htype == 1 and present == 0 then
			top:add_proto_expert_info(e.nomsg_empty)
		end
		local inv = tvb(20, 4):uint()
		if ok and not response and inv ~= 0 and not handles[inv] then
			top:add_proto_expert_info(e.inv_handle)
		end
		if ok and htype == 0 then
			rpc_at = rd.pos
		end
	elseif htype == 4 then
		local ok, code = error_body(rd, top)
		complete = ok
		if not response then
			top:add_proto_expert_info(e.error_flag)
		end
		if code then
			top:append_text(", " .. (errcodes[code] or ("error " .. code)))
		end
	elseif htype == 5 then
		complete = connprop(rd, top)
	else
		top:add_proto_expert_info(e.htype)
	end

	if not complete then
		top:add_proto_expert_info(seg.last and e.truncated or e.continued)
	else
		top:add(f.hdr_len, rd.pos):set_generated()
		top:set_len(rd.pos)
	end
	if not seg.last then
		top:add(f.continued, true):set_generated()
	end

	pinfo.cols.info:set(string.format("%s XID 0x%08x%s", name, xid,
		response and " (response)" or ""))
	if rpc_at and rpc_at + 8 <= tvb:len() then
		-- 3.2: F_RESPONSE is the RPC message's msg_type.
		local mtype = tvb(rpc_at + 4, 4):uint()
		if (mtype == 1) ~= response then
			top:add_proto_expert_info(e.response)
		end
		pinfo.cols.info:append(" ")
		pinfo.cols.info:fence()
		rpc:call(tvb(rpc_at):tvb(), pinfo, tree)
	end
	return true
end

-- A whole Send Wireshark reassembled from several DDP segments.
local function reassembled_send(tvb)
	if tvb:offset() ~= 0 then
		return nil
	end
	for _, fi in ipairs({ fx_reassembled() }) do
		if fi.value == tvb:len() then
			return { send = true, mo = 0, last = true }
		end
	end
	return nil
end

local function heuristic(tvb, pinfo, tree)
	if tvb:len() < 20 or tvb(4, 4):uint() ~= 2 then
		return false
	end
	local seg = ddp_segment(tvb) or reassembled_send(tvb)
	if not seg or not seg.send or seg.mo ~= 0 then
		return false
	end
	return dissect(tvb, pinfo, tree, seg)
end

p:register_heuristic("iwarp_ddp_rdmap", heuristic)
