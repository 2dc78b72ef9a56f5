(** The hypothesis of C3 decided in Coq: exact interval arithmetic over Q of a box through a
    Maxout net (the per-piece bounds max|a_ij| of docs/spec.md §2), its soundness over the reals,
    and a boolean checker [shifts_ok] of the shift constants with [shifts_ok_sound]:
    [shifts_ok M Rs B = true] implies [shifts_bound M Rs x] for every x in the box B.
    Link.v evaluates it with [vm_compute] on the constants `exactform compile` writes. *)
From Coq Require Import Reals QArith Qreals Lra Lia List Arith Bool.
From Exactform Require Import Defs Sums C3.
Import ListNotations.

(** * Computation over Q *)

Open Scope Q_scope.

Definition qmax (a b : Q) : Q := if Qle_bool a b then b else a.

(** [qrmax n f] = max_{j≤n} f j, [qvmax T f] = max_{j<T} f j (0 for T = 0), as [rmax], [vmax]. *)
Fixpoint qrmax (n : nat) (f : nat -> Q) : Q :=
  match n with O => f O | S n => qmax (qrmax n f) (f (S n)) end.
Definition qvmax (T : nat) (f : nat -> Q) : Q := match T with O => 0 | S n => qrmax n f end.

(** Σ_{c<n} f c, reduced at every step. *)
Fixpoint qsum (n : nat) (f : nat -> Q) : Q :=
  match n with O => 0 | S n => Qred (qsum n f + f n) end.

(** A box: one interval (lower, upper) per coordinate. *)
Definition box := list (Q * Q).
Definition blo (B : box) (c : nat) : Q := fst (nth c B (0, 0)).
Definition bhi (B : box) (c : nat) : Q := snd (nth c B (0, 0)).

(** The exact range of a · h over the box (attained at a corner). *)
Definition dot_lo (n : nat) (a : nat -> Q) (B : box) : Q :=
  qsum n (fun c => if Qle_bool 0 (a c) then a c * blo B c else a c * bhi B c).
Definition dot_hi (n : nat) (a : nat -> Q) (B : box) : Q :=
  qsum n (fun c => if Qle_bool 0 (a c) then a c * bhi B c else a c * blo B c).

(** The range of the piece a_ij, its magnitude max|a_ij|, and the box of the layer's output. *)
Definition piece_lo (L : layer) (nin : nat) (B : box) (i j : nat) : Q := Qred (dot_lo nin (wt L i j) B + bs L i j).
Definition piece_hi (L : layer) (nin : nat) (B : box) (i j : nat) : Q := Qred (dot_hi nin (wt L i j) B + bs L i j).
Definition piece_mag (L : layer) (nin : nat) (B : box) (i j : nat) : Q :=
  qmax (- piece_lo L nin B i j) (piece_hi L nin B i j).

Definition next_box (L : layer) (nin : nat) (B : box) : box :=
  map (fun i => (qvmax (rank L i) (piece_lo L nin B i), qvmax (rank L i) (piece_hi L nin B i))) (seq 0 (units L)).

(** Every slot j < T of every unit: max|a_{i,pad(j)}| over the box ≤ R_ij. *)
Definition layer_shifts_ok (T nin : nat) (L : layer) (R : nat -> nat -> Q) (B : box) : bool :=
  forallb (fun i => forallb (fun j => Qle_bool (piece_mag L nin B i (pad (rank L i) j)) (R i j)) (seq 0 T))
    (seq 0 (units L)).

Fixpoint layers_shifts_ok (T l nin : nat) (ls : list layer) (Rs : shifts) (B : box) : bool :=
  match ls with
  | [] => true
  | L :: ls => layer_shifts_ok T nin L (Rs l) B && layers_shifts_ok T (S l) (units L) ls Rs (next_box L nin B)
  end.

(** The checker: one interval per input, and every layer's constants dominate its pieces on the
    box propagated from B. *)
Definition shifts_ok (M : maxout) (Rs : shifts) (B : box) : bool :=
  (length B =? input_dim M)%nat && layers_shifts_ok (max_rank M) 0 (input_dim M) (layers M) Rs B.

(** [well_formed] decided. *)
Definition well_formedb (M : maxout) : bool :=
  match layers M with [] => false | _ => true end
  && forallb (fun L => (1 <=? units L)%nat && forallb (fun i => (1 <=? rank L i)%nat) (seq 0 (units L))) (layers M).

(** * Soundness over the reals *)

Open Scope R_scope.

Definition in_box (d : nat) (B : box) (x : nat -> R) : Prop :=
  forall c, (c < d)%nat -> Q2R (blo B c) <= x c <= Q2R (bhi B c).

Lemma Q2R_qmax : forall a b, Q2R (qmax a b) = Rmax (Q2R a) (Q2R b).
Proof.
  intros. unfold qmax. destruct (Qle_bool a b) eqn:E.
  - apply Qle_bool_iff, Qle_Rle in E. rewrite Rmax_right; auto.
  - assert (~ (a <= b)%Q) by (intro H; apply Qle_bool_iff in H; congruence).
    apply Qnot_le_lt, Qlt_Rlt in H. rewrite Rmax_left; lra.
Qed.

Lemma Q2R_qvmax : forall T f, Q2R (qvmax T f) = vmax T (fun j => Q2R (f j)).
Proof.
  intros [|n] f; [unfold Q2R; simpl; lra | simpl].
  induction n; simpl; auto. rewrite Q2R_qmax, IHn. reflexivity.
Qed.

Lemma Q2R_Qred : forall q, Q2R (Qred q) = Q2R q.
Proof. intros. apply Qeq_eqR, Qred_correct. Qed.

Lemma Q2R_qsum : forall n f, Q2R (qsum n f) = rsum n (fun c => Q2R (f c)).
Proof.
  induction n; intros; cbn [qsum rsum]; [unfold Q2R; simpl; lra | ]. rewrite Q2R_Qred, Q2R_plus, IHn. reflexivity.
Qed.

Lemma vmax_mono : forall T f g, (forall j, (j < T)%nat -> f j <= g j) -> vmax T f <= vmax T g.
Proof.
  intros [|n] f g H; [simpl; lra | ]. apply vmax_le; [lia | ]. intros j Hj.
  eapply Rle_trans; [apply H; auto | apply vmax_ge; auto].
Qed.

Section Sound.
Variables (B : box).

Lemma dot_range : forall n a h, in_box n B h ->
  Q2R (dot_lo n a B) <= dot n a h <= Q2R (dot_hi n a B).
Proof.
  intros n a h Hh. unfold dot_lo, dot_hi, dot. rewrite !Q2R_qsum. split; apply rsum_le; intros c Hc;
    destruct (Hh c Hc) as [Hl Hu]; destruct (Qle_bool 0 (a c)) eqn:E; rewrite Q2R_mult.
  - apply Qle_bool_iff, Qle_Rle in E. rewrite Q2R0 in E. apply Rmult_le_compat_l; auto.
  - assert (~ (0 <= a c)%Q) by (intro H; apply Qle_bool_iff in H; congruence).
    apply Qnot_le_lt, Qlt_Rlt in H. rewrite Q2R0 in H. apply Rmult_le_compat_neg_l; lra.
  - apply Qle_bool_iff, Qle_Rle in E. rewrite Q2R0 in E. apply Rmult_le_compat_l; auto.
  - assert (~ (0 <= a c)%Q) by (intro H; apply Qle_bool_iff in H; congruence).
    apply Qnot_le_lt, Qlt_Rlt in H. rewrite Q2R0 in H. apply Rmult_le_compat_neg_l; lra.
Qed.

Lemma piece_range : forall L nin h i j, in_box nin B h ->
  Q2R (piece_lo L nin B i j) <= piece L nin h i j <= Q2R (piece_hi L nin B i j).
Proof.
  intros. unfold piece_lo, piece_hi, piece. rewrite !Q2R_Qred, !Q2R_plus.
  destruct (dot_range nin (wt L i j) h H). lra.
Qed.

Lemma piece_abs : forall L nin h i j, in_box nin B h -> Rabs (piece L nin h i j) <= Q2R (piece_mag L nin B i j).
Proof.
  intros. destruct (piece_range L nin h i j H). unfold piece_mag. rewrite Q2R_qmax, Q2R_opp.
  apply Rabs_le. pose proof (Rmax_l (- Q2R (piece_lo L nin B i j)) (Q2R (piece_hi L nin B i j))).
  pose proof (Rmax_r (- Q2R (piece_lo L nin B i j)) (Q2R (piece_hi L nin B i j))). lra.
Qed.
End Sound.

Lemma nth_map_seq : forall {A} (f : nat -> A) n i d, (i < n)%nat -> nth i (map f (seq 0 n)) d = f i.
Proof.
  intros. rewrite nth_indep with (d' := f O) by (rewrite map_length, seq_length; auto).
  rewrite map_nth, seq_nth; auto.
Qed.

Lemma next_box_sound : forall L nin B h, in_box nin B h ->
  in_box (units L) (next_box L nin B) (layer_eval L nin h).
Proof.
  intros L nin B h Hh i Hi. unfold blo, bhi, next_box. rewrite nth_map_seq by auto. simpl.
  unfold layer_eval. rewrite !Q2R_qvmax. split; apply vmax_mono; intros j Hj; apply piece_range; auto.
Qed.

Lemma forallb_seq : forall f n, forallb f (seq 0 n) = true -> forall i, (i < n)%nat -> f i = true.
Proof. intros. rewrite forallb_forall in H. apply H, in_seq. lia. Qed.

Lemma layers_shifts_sound : forall T Rs ls l nin B h,
  layers_shifts_ok T l nin ls Rs B = true -> in_box nin B h -> shifts_hold T Rs l nin ls h.
Proof.
  induction ls as [|L ls IH]; intros l nin B h Hok Hh; simpl; auto.
  simpl in Hok. apply andb_prop in Hok. destruct Hok as [H1 H2]. split.
  - intros i j Hi Hj. eapply Rle_trans; [apply (piece_abs B); eauto | ].
    apply Qle_Rle, Qle_bool_iff. unfold layer_shifts_ok in H1.
    exact (forallb_seq _ _ (forallb_seq _ _ H1 i Hi) j Hj).
  - apply (IH (S l) (units L) (next_box L nin B)); auto. apply next_box_sound; auto.
Qed.

(** The checker is sound: wherever it accepts, the hypothesis of C3 holds on the whole box. *)
Theorem shifts_ok_sound : forall (M : maxout) (Rs : shifts) (B : box),
  shifts_ok M Rs B = true -> forall x, in_box (input_dim M) B x -> shifts_bound M Rs x.
Proof.
  intros M Rs B H x Hx. unfold shifts_ok in H. apply andb_prop in H. destruct H as [_ H].
  unfold shifts_bound. eapply layers_shifts_sound; eauto.
Qed.

Lemma well_formedb_sound : forall M, well_formedb M = true -> well_formed M.
Proof.
  intros M H. unfold well_formedb in H. apply andb_prop in H. destruct H as [H1 H2]. split.
  - destruct (layers M); discriminate.
  - intros L HL. rewrite forallb_forall in H2. specialize (H2 L HL). apply andb_prop in H2.
    destruct H2 as [H3 H4]. split; [apply Nat.leb_le; auto | ].
    intros i Hi. apply Nat.leb_le. exact (forallb_seq _ _ H4 i Hi).
Qed.

(** C3 with its hypothesis decided by computation: two booleans, evaluated by [vm_compute] on
    a given net, shift constants and box, give Tf = M on the whole box. *)
Theorem C3_checked : forall (M : maxout) (Rs : shifts) (B : box),
  well_formedb M = true -> shifts_ok M Rs B = true ->
  forall x, in_box (input_dim M) B x ->
  forall o, tf_eval hardmax (construct M Rs) x o = maxout_eval M x o.
Proof.
  intros. apply C3_construction_computes_maxout.
  - apply well_formedb_sound; auto.
  - eapply shifts_ok_sound; eauto.
Qed.
