(** Claim C4 (docs/spec.md §2): the sizes of the constructed Transformer, counted from its
    matrices' dimensions, equal the closed formula, for every Maxout net and shift constants. *)
From Coq Require Import Arith Lia List.
From Exactform Require Import Defs.
Import ListNotations.
Open Scope nat_scope.

(** Sizes read off any Transformer: hidden widths of its feed-forward blocks, head counts of its
    attention blocks, and the dense parameter count (every entry of every matrix and vector). *)
Definition block_hidden (b : block) : list nat := match b with FF f => [hid f] | ATT _ => [] end.
Definition block_heads (b : block) : list nat := match b with FF _ => [] | ATT hs => [length hs] end.
Definition head_params (w : nat) (h : head) : nat := hq h * w + hq h * w + hv h * w + w * hv h.
Definition block_params (w : nat) (b : block) : nat :=
  match b with
  | FF f => hid f * w + hid f + w * hid f + w
  | ATT hs => fold_right (fun h acc => head_params w h + acc) 0 hs
  end.
Definition tf_params (tf : transformer) : nat :=
  let w := width tf in
  w * tin tf + tokens tf * w + fold_right (fun b acc => block_params w b + acc) 0 (blocks tf)
  + touts tf * w + touts tf.

(** The closed formula of §2, with n = (n_0, …, n_L), T tokens, o outputs: hidden widths
    2 n_ℓ T and 2 (n_{ℓ−1} + 2 n_ℓ), heads n_ℓ, width 1 + T + 3N, parameters
    w·n_0 + T·w + Σ_FF (2hw + h + w) + 4w Σ_ℓ n_ℓ + o(w + 1). *)
Fixpoint closed_hidden (T nin : nat) (ns : list nat) : list nat :=
  match ns with [] => [] | n :: ns => 2 * n * T :: 2 * (nin + 2 * n) :: closed_hidden T n ns end.
Definition sum (l : list nat) : nat := fold_right plus 0 l.
Definition closed_params (T N o : nat) (n0 : nat) (ns : list nat) : nat :=
  let w := 1 + T + 3 * N in
  w * n0 + T * w + sum (map (fun h => 2 * h * w + h + w) (closed_hidden T n0 ns))
  + 4 * w * sum ns + o * (w + 1).

Lemma max_heads_params : forall w T N n,
  fold_right (fun h acc => head_params w h + acc) 0 (map (max_head T N) (seq 0 n)) = 4 * w * n.
Proof.
  intros w T N n. assert (forall s, fold_right (fun h acc => head_params w h + acc) 0 (map (max_head T N) (seq s n)) = 4 * w * n); [ | apply H].
  induction n; intros s; simpl; [lia | ].
  rewrite IHn. unfold head_params; simpl. lia.
Qed.

Section Layers.
Variables (T N : nat) (Rs : shifts).

Lemma layer_blocks_hidden : forall ls l nin,
  flat_map block_hidden (layer_blocks T N l nin ls Rs) = closed_hidden T nin (map units ls).
Proof. induction ls; intros; simpl; auto. rewrite IHls. reflexivity. Qed.

Lemma layer_blocks_heads : forall ls l nin,
  flat_map block_heads (layer_blocks T N l nin ls Rs) = map units ls.
Proof.
  induction ls; intros; simpl; auto. rewrite IHls, map_length, seq_length. reflexivity.
Qed.

Lemma layer_blocks_length : forall ls l nin, length (layer_blocks T N l nin ls Rs) = 3 * length ls.
Proof. induction ls; intros; simpl; auto. rewrite IHls. lia. Qed.

Lemma layer_blocks_params : forall ls l nin w,
  fold_right (fun b acc => block_params w b + acc) 0 (layer_blocks T N l nin ls Rs)
  = sum (map (fun h => 2 * h * w + h + w) (closed_hidden T nin (map units ls))) + 4 * w * sum (map units ls).
Proof.
  induction ls; intros; simpl; auto. rewrite IHls, max_heads_params. simpl. nia.
Qed.
End Layers.

Theorem C4_sizes : forall (M : maxout) (Rs : shifts),
  let tf := construct M Rs in
  let T := max_rank M in let N := max_width M in
  tokens tf = T /\
  width tf = 1 + T + 3 * N /\
  length (blocks tf) = 3 * length (layers M) /\
  flat_map block_hidden (blocks tf) = closed_hidden T (input_dim M) (map units (layers M)) /\
  flat_map block_heads (blocks tf) = map units (layers M) /\
  tf_params tf = closed_params T N (outputs M) (input_dim M) (map units (layers M)).
Proof.
  intros. unfold tf, construct, tf_params; simpl.
  rewrite layer_blocks_length, layer_blocks_hidden, layer_blocks_heads, layer_blocks_params.
  unfold closed_params, lwidth. repeat split; try reflexivity. fold T N. nia.
Qed.

(** * The size against the net: a polynomial in its widths, ranks and depth *)

Lemma sum_cons : forall a l, sum (a :: l) = a + sum l.
Proof. reflexivity. Qed.

Lemma hidden_params_le : forall T N w ns nin, nin <= N -> (forall n, In n ns -> n <= N) ->
  sum (map (fun h => 2 * h * w + h + w) (closed_hidden T nin ns))
  <= length ns * ((4 * N * T + 12 * N + 2) * w + 2 * N * T + 6 * N).
Proof.
  induction ns as [|n ns IH]; intros nin Hnin Hns; [simpl; lia | ].
  cbn [closed_hidden map length]. rewrite !sum_cons.
  assert (Hn : n <= N) by (apply Hns; left; reflexivity).
  specialize (IH n Hn (fun m Hm => Hns m (or_intror Hm))).
  assert (A1 : n * T * w <= N * T * w) by (apply Nat.mul_le_mono_r, Nat.mul_le_mono_r; auto).
  assert (A2 : n * T <= N * T) by (apply Nat.mul_le_mono_r; auto).
  assert (A3 : n * w <= N * w) by (apply Nat.mul_le_mono_r; auto).
  assert (A4 : nin * w <= N * w) by (apply Nat.mul_le_mono_r; auto).
  set (K := (4 * N * T + 12 * N + 2) * w + 2 * N * T + 6 * N) in *.
  assert (Hstep : 2 * (2 * n * T) * w + 2 * n * T + w + (2 * (2 * (nin + 2 * n)) * w + 2 * (nin + 2 * n) + w) <= K).
  { unfold K. nia. }
  rewrite Nat.mul_succ_l. lia.
Qed.

Lemma sum_le : forall ns N, (forall n, In n ns -> n <= N) -> sum ns <= length ns * N.
Proof.
  induction ns as [|n ns IH]; intros N H; simpl; [lia | ].
  pose proof (H n (or_introl eq_refl)). pose proof (IH N (fun m Hm => H m (or_intror Hm))). lia.
Qed.

Lemma widths_le_max : forall M n, In n (widths M) -> n <= max_width M.
Proof.
  intros M n. unfold max_width. generalize (widths M). induction l as [|a l IH]; simpl; [tauto | ].
  intros [<-|H]; [lia | specialize (IH H); lia].
Qed.

(** With T the largest rank, N the largest width, L the depth, d inputs and o outputs, the
    Transformer has at most w(d + T + o) + o + L((4NT + 16N + 2)w + 2NT + 6N) parameters,
    w = 1 + T + 3N: O(L·N·T·(T + N)) beside the net's own Σ_ℓ Σ_i k_ℓi (n_{ℓ−1} + 1). *)
Theorem C4_params_polynomial : forall (M : maxout) (Rs : shifts),
  let T := max_rank M in let N := max_width M in let L := length (layers M) in
  let w := 1 + T + 3 * N in
  tf_params (construct M Rs)
  <= w * (input_dim M + T + outputs M) + outputs M + L * ((4 * N * T + 16 * N + 2) * w + 2 * N * T + 6 * N).
Proof.
  intros M Rs T N L w. destruct (C4_sizes M Rs) as [_ [_ [_ [_ [_ E]]]]]. rewrite E. fold T N.
  unfold closed_params. fold w.
  assert (Hd : input_dim M <= N) by (apply widths_le_max; left; reflexivity).
  assert (Hns : forall n, In n (map units (layers M)) -> n <= N) by (intros; apply widths_le_max; right; auto).
  pose proof (hidden_params_le T N w (map units (layers M)) (input_dim M) Hd Hns) as H1.
  pose proof (sum_le (map units (layers M)) N Hns) as H2.
  rewrite map_length in H1, H2. fold L in H1, H2.
  assert (H3 : 4 * w * sum (map units (layers M)) <= 4 * w * (L * N)) by (apply Nat.mul_le_mono_l; auto).
  nia.
Qed.

(** * The size against the net's own parameter count *)

(** The Maxout net's parameters: Σ_ℓ Σ_i k_ℓi (n_{ℓ−1} + 1) + o (n_L + 1). *)
Fixpoint layers_params (nin : nat) (ls : list layer) : nat :=
  match ls with
  | [] => 0
  | L :: ls => sum (map (fun i => rank L i * (nin + 1)) (seq 0 (units L))) + layers_params (units L) ls
  end.
Definition maxout_params (M : maxout) : nat :=
  layers_params (input_dim M) (layers M) + outputs M * (last (widths M) 0 + 1).

Lemma fold_max_le_sum : forall l, fold_right Nat.max 0 l <= sum l.
Proof. induction l; simpl; lia. Qed.

Lemma sum_map_le : forall (f g : nat -> nat) l, (forall x, In x l -> f x <= g x) -> sum (map f l) <= sum (map g l).
Proof.
  induction l as [|a l IH]; intros H; [simpl; lia | ]. cbn [map].
  pose proof (H a (or_introl eq_refl)). pose proof (IH (fun x Hx => H x (or_intror Hx))). rewrite !sum_cons. lia.
Qed.

Lemma sum_map_ge_length : forall (f : nat -> nat) l, (forall x, In x l -> 1 <= f x) -> length l <= sum (map f l).
Proof.
  induction l as [|a l IH]; intros H; [simpl; lia | ]. cbn [map length].
  pose proof (H a (or_introl eq_refl)). pose proof (IH (fun x Hx => H x (or_intror Hx))). rewrite sum_cons. lia.
Qed.

(** One layer: n(nin + 1) ≤ P_ℓ, and the layer's rank ≤ P_ℓ. *)
Lemma layer_params_ge : forall L nin, (forall i, i < units L -> 1 <= rank L i) ->
  units L * (nin + 1) <= sum (map (fun i => rank L i * (nin + 1)) (seq 0 (units L))) /\
  layer_rank L <= sum (map (fun i => rank L i * (nin + 1)) (seq 0 (units L))).
Proof.
  intros L nin Hr. split.
  - assert (E : sum (map (fun i => rank L i * (nin + 1)) (seq 0 (units L))) = sum (map (rank L) (seq 0 (units L))) * (nin + 1)).
    { generalize (seq 0 (units L)). induction l; [simpl; lia | ]. cbn [map]. rewrite !sum_cons, IHl. lia. }
    rewrite E. apply Nat.mul_le_mono_r. rewrite <- (seq_length (units L) 0) at 1.
    apply sum_map_ge_length. intros i Hi. apply in_seq in Hi. apply Hr. lia.
  - unfold layer_rank. eapply Nat.le_trans; [apply fold_max_le_sum | ].
    apply sum_map_le. intros. lia.
Qed.

Lemma layer_cost_le : forall T w nin n P, 1 <= w -> 1 <= n -> n * (nin + 1) <= P ->
  (2 * (2 * n * T) * w + 2 * n * T + w) + (2 * (2 * (nin + 2 * n)) * w + 2 * (nin + 2 * n) + w) + 4 * w * n
  <= (6 * T + 24) * w * P.
Proof.
  intros T w nin n P Hw Hn HP.
  assert (A : nin + n <= n * (nin + 1)) by nia.
  assert (B : (6 * T + 24) * w * (n * (nin + 1)) <= (6 * T + 24) * w * P) by (apply Nat.mul_le_mono_l; auto).
  nia.
Qed.

Lemma layers_cost_le : forall T w ls nin, 1 <= w ->
  (forall L, In L ls -> 1 <= units L /\ forall i, i < units L -> 1 <= rank L i) ->
  sum (map (fun h => 2 * h * w + h + w) (closed_hidden T nin (map units ls))) + 4 * w * sum (map units ls)
  <= (6 * T + 24) * w * layers_params nin ls.
Proof.
  induction ls as [|L ls IH]; intros nin Hw Hls; [simpl; lia | ].
  cbn [closed_hidden map layers_params]. rewrite !sum_cons.
  destruct (Hls L (or_introl eq_refl)) as [Hu Hr].
  destruct (layer_params_ge L nin Hr) as [H1 _].
  pose proof (layer_cost_le T w nin (units L) _ Hw Hu H1).
  pose proof (IH (units L) Hw (fun L' HL' => Hls L' (or_intror HL'))). nia.
Qed.

Lemma max_rank_le : forall ls nin, (forall L, In L ls -> forall i, i < units L -> 1 <= rank L i) ->
  fold_right Nat.max 0 (map layer_rank ls) <= layers_params nin ls.
Proof.
  induction ls as [|L ls IH]; intros nin H; [simpl; lia | ]. cbn [map fold_right layers_params].
  destruct (layer_params_ge L nin (H L (or_introl eq_refl))) as [_ B].
  pose proof (IH (units L) (fun L' HL' => H L' (or_intror HL'))). lia.
Qed.

(** The paper's point made exact: the Transformer has at most (6T + 26)·w times the net's own
    parameter count, w = 1 + T + 3N — a factor polynomial in the largest rank and width. *)
Theorem C4_params_vs_maxout : forall (M : maxout) (Rs : shifts),
  layers M <> [] -> (forall L, In L (layers M) -> 1 <= units L /\ forall i, i < units L -> 1 <= rank L i) ->
  let T := max_rank M in let w := 1 + T + 3 * max_width M in
  tf_params (construct M Rs) <= (6 * T + 26) * w * maxout_params M.
Proof.
  intros M Rs Hne Hls T w. destruct (C4_sizes M Rs) as [_ [_ [_ [_ [_ E]]]]]. rewrite E.
  unfold closed_params, maxout_params. fold T. fold w.
  set (P := layers_params (input_dim M) (layers M)).
  pose proof (layers_cost_le T w (layers M) (input_dim M) ltac:(unfold w; lia) Hls) as H1. fold P in H1.
  (* d + T ≤ 2P: the first layer has ≥ d + 1 parameters, and T is a rank of some layer *)
  assert (HT : T <= P) by (apply max_rank_le; intros; apply Hls; auto).
  assert (HdP : input_dim M <= P).
  { unfold P. destruct (layers M) as [|L ls] eqn:EL; [contradiction | ].
    destruct (Hls L (or_introl eq_refl)) as [Hu Hr]. destruct (layer_params_ge L (input_dim M) Hr) as [A _].
    cbn [layers_params]. nia. }
  assert (Hd : input_dim M + T <= 2 * P) by lia.
  assert (Ho : outputs M * (w + 1) <= 2 * w * (outputs M * (last (widths M) 0 + 1))) by nia.
  nia.
Qed.
